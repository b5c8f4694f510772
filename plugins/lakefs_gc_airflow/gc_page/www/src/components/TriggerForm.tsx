import { Box, Button, Code, HStack, Heading, Input, Link, SimpleGrid, Spinner, Text } from "@chakra-ui/react";
import { useEffect, useState } from "react";
import { base, runUrl } from "../api";
import type { ParamSpec } from "../types";
import { checkParam, type Grace, graceWarning, types } from "./paramCheck";

// Run GC: the DAG's trigger form, checked field by field before anything is sent. Airflow 3.3's own
// trigger form checks only required fields on the client: a number outside its Param's range comes
// back from the server as a "Bad Request" toast over a dialog whose message names only the first
// bad Param. Here every field is checked against its Param's JSON schema as it is typed (by Ajv:
// paramCheck.ts), turns red with its reason, and Run stays disabled until every field is good; what
// the server still refuses lands on its field. Across fields, one warning that does not block: a
// minimum age below lakeFS's grace period (grace: as the runs' answer gives it), which prepare_run
// refuses without unsafe_min_age_override. A run created is a notice with a link to it in Airflow.
const asText = (v: unknown) => (v === null || v === undefined ? "" : String(v));

export const TriggerForm = ({ dagId, onTriggered, grace }: { dagId: string; onTriggered: () => void; grace?: Grace | null }) => {
  const [params, setParams] = useState<Record<string, ParamSpec> | null>(null);
  const [paused, setPaused] = useState(false);
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [flags, setFlags] = useState<Record<string, boolean>>({});
  const [serverErrors, setServerErrors] = useState<Record<string, string>>({});
  const [message, setMessage] = useState<{ ok: boolean; text: string; runId?: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const [open, setOpen] = useState(false);
  const airflow = (path: string) => `${base()}/api/v2/dags/${encodeURIComponent(dagId)}${path}`;
  useEffect(() => {
    if (!open || params) return;
    fetch(airflow("/details"), { credentials: "same-origin" })
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`${r.status} ${r.statusText}`))))
      .then((d: { params: Record<string, ParamSpec>; is_paused: boolean }) => {
        setParams(d.params);
        setPaused(d.is_paused);
        const t: Record<string, string> = {};
        const f: Record<string, boolean> = {};
        for (const [k, p] of Object.entries(d.params)) {
          if (types(p.schema).includes("boolean")) f[k] = Boolean(p.value);
          else t[k] = asText(p.value);
        }
        setTexts(t);
        setFlags(f);
      })
      .catch((e: Error) => setMessage({ ok: false, text: `the DAG's Params cannot be read: ${e.message}` }));
  }, [open, params, dagId]);
  const checked = Object.fromEntries(
    Object.entries(params ?? {}).filter(([k]) => !(k in flags)).map(([k, p]) => [k, checkParam(texts[k] ?? "", p.schema)]));
  const errors: Record<string, string> = { ...serverErrors };
  for (const [k, c] of Object.entries(checked)) if (c.error) errors[k] = c.error;
  const warnings: Record<string, string> = {};
  const ageWarning = errors.min_age_seconds ? null
    : graceWarning(checked.min_age_seconds?.value, Boolean(flags.unsafe_min_age_override), grace);
  if (ageWarning) warnings.min_age_seconds = ageWarning;
  const run = () => {
    if (!params || Object.keys(errors).length) return;
    const conf: Record<string, unknown> = { ...flags };
    for (const [k, c] of Object.entries(checked)) conf[k] = c.value;
    setBusy(true);
    setMessage(null);
    fetch(airflow("/dagRuns"), {
      method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ logical_date: null, conf }),
    })
      .then(async (r) => {
        const body = await r.json().catch(() => ({}));
        if (r.ok) {
          setMessage({ ok: true, runId: String(body.dag_run_id),
            text: `Run ${body.dag_run_id} queued${paused ? " (the DAG is paused: it runs once you unpause it)" : ""}` });
          onTriggered();
          return;
        }
        const detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail ?? body);
        const m = /Invalid input for param (\w+): ([^\n]*)/.exec(detail);
        if (m && m[1] in params) setServerErrors({ [m[1]]: m[2] });
        setMessage({ ok: false, text: m ? `refused: ${m[1]}: ${m[2]}` : `refused (${r.status}): ${detail.split("\n")[0]}` });
      })
      .catch((e: Error) => setMessage({ ok: false, text: e.message }))
      .finally(() => setBusy(false));
  };
  const bad = Object.keys(errors);
  return (
    <Box borderWidth="1px" borderRadius="md" p={3} data-testid="gc-trigger">
      <HStack justify="space-between">
        <Heading size="sm">Run GC</Heading>
        <Button size="xs" variant="outline" onClick={() => setOpen(!open)} data-testid="gc-trigger-open">
          {open ? "Hide the form" : "Open the form"}
        </Button>
      </HStack>
      {open && params ? (
        <Box mt={2}>
          {paused ? <Text color="orange.600" mb={2}>The DAG is paused: a run created here waits until you unpause it.</Text> : null}
          <SimpleGrid columns={{ base: 1, lg: 2 }} gap={3}>
            {Object.entries(params).map(([k, p]) => (
              <Box key={k} data-testid={`gc-param-${k}`} data-invalid={errors[k] ? "true" : undefined}
                data-warning={warnings[k] ? "true" : undefined}>
                <Text fontSize="sm" fontWeight="semibold">{(p.schema.title as string) ?? k} <Code fontSize="xs">{k}</Code></Text>
                {k in flags ? (
                  <input type="checkbox" name={k} checked={flags[k]}
                    onChange={(e: React.ChangeEvent<HTMLInputElement>) => setFlags({ ...flags, [k]: e.target.checked })} />
                ) : Array.isArray(p.schema.enum) ? (
                  <select name={k} value={texts[k] ?? ""} style={{ border: "1px solid #ccc", padding: "2px 4px" }}
                    onChange={(e: React.ChangeEvent<HTMLSelectElement>) => { setTexts({ ...texts, [k]: e.target.value }); setServerErrors({}); }}>
                    {(p.schema.enum as string[]).map((o) => <option key={o} value={o}>{o}</option>)}
                  </select>
                ) : (
                  <Input size="sm" name={k} value={texts[k] ?? ""} aria-invalid={errors[k] ? true : undefined}
                    borderColor={errors[k] ? "red.500" : warnings[k] ? "orange.400" : undefined}
                    borderWidth={errors[k] || warnings[k] ? "2px" : undefined}
                    onChange={(e: React.ChangeEvent<HTMLInputElement>) => { setTexts({ ...texts, [k]: e.target.value }); setServerErrors({}); }} />
                )}
                {errors[k] ? <Text color="red.500" fontSize="sm" data-testid={`gc-param-error-${k}`}>{errors[k]}</Text> : null}
                {warnings[k] ? <Text color="orange.700" fontSize="sm" data-testid={`gc-param-warning-${k}`}>{warnings[k]}</Text> : null}
                {p.description ? <Text fontSize="xs" color="gray.600">{p.description}</Text> : null}
              </Box>
            ))}
          </SimpleGrid>
          <HStack mt={3} gap={3}>
            <Button size="sm" onClick={run} loading={busy} disabled={bad.length > 0} data-testid="gc-trigger-run">Run</Button>
            {bad.length ? <Text color="red.500" fontSize="sm">Fix {bad.join(", ")} first.</Text> : null}
            {message && !message.ok ? <Text color="red.500" fontSize="sm" data-testid="gc-trigger-message">{message.text}</Text> : null}
          </HStack>
        </Box>
      ) : open ? (message ? <Text color="red.500">{message.text}</Text> : <Spinner />) : null}
      {message?.ok && message.runId ? (
        <Box mt={2} p={2} borderWidth="1px" borderRadius="md" borderColor="green.500" bg="green.50" data-testid="gc-trigger-notice">
          <Text fontSize="sm" color="green.800">
            <span data-testid="gc-trigger-message">{message.text}</span>:{" "}
            <Link href={runUrl(dagId, message.runId)} color="blue.600" data-testid="gc-trigger-run-link">open the DAG run in Airflow</Link>.
            The runs below list it; reload the page to see how it ends.
          </Text>
        </Box>
      ) : null}
    </Box>
  );
};
