// The lakeFS GC page: per repository, its GC runs over time (charts), the latest run in detail,
// and every run with links to its DAG run and task logs. Data: GET lakefs-gc/api/... (our FastAPI
// app, same origin; Airflow's session cookie authenticates it).
import { Badge, Box, Button, Code, HStack, Heading, Input, Link, SimpleGrid, Spinner, Table, Text } from "@chakra-ui/react";
import { Chart, registerables } from "chart.js";
import { useEffect, useRef, useState } from "react";

Chart.register(...registerables);

type Props = { dagId?: string; runId?: string; taskId?: string; mapIndex?: string };

type Repo = { repository: string; dag_id: string; schedule: string | null; lakefs_conn_id: string; storage_conn_id: string };
type DagRun = {
  run_id: string; state: string; run_type: string; logical_date: string | null; start_date: string | null;
  end_date: string | null; failed_tasks: string[];
};
type Run = {
  mark_id: string | null; sweep: string | null; airflow_run_id: string | null; start_time: string | null;
  cutoff_time?: string | null; mode?: string; flow?: string | null; dry_run?: boolean; success?: boolean;
  unsafe_min_age_override?: boolean; held_back_until?: string | null; held_back_reason?: string | null;
  dead_letters?: string | null; delete_skipped?: string | null;
  guard?: { max_delete_share: number | null; max_delete_count: number | null };
  rules?: Record<string, number | string | null>;
  report: string | null; problem: string | null; rows: [string, string][]; seconds: Record<string, number>;
  listed_objects?: number | null; candidates?: number | null; to_delete?: number | null; deleted?: number | null;
  already_gone?: number | null; held_back?: number | null; delete_failed?: number | null;
  reclaimed_bytes?: number | null; would_delete?: number | null; dag_run: DagRun | null;
};
type ExplainAnswer = { target: string; address: string; note: string | null; verdict: string; reason: string; fates: string[]; lines: string[] };
type Amount = { objects: number; bytes: number };
type HeldBy = { alone: Record<string, Amount>; shared: Record<string, Amount> };
// a run's space.json (attribute_space), as the API gives the newest one
type SpaceDoc = {
  mark_id: string; airflow_run_id: string | null; problem: string | null; computed_at?: string; cutoff?: string;
  rules?: { default_days: number; branches: Record<string, number> }; stale_branch_days?: number;
  stale?: { branch: string; head_age_days: number; alone: Amount }[];
  attribution?: { total: Amount; classes: Record<string, Amount>; branches: Record<string, HeldBy>; tags: Record<string, Amount>;
    sharing: string };
};
type WhatIfAnswer = { change: string; lines: string[] };
type RunsAnswer = { repository: string; dag_id: string; namespace: string | null; error: string | null; runs: Run[]; steps?: string[];
  version?: string; space?: SpaceDoc | null };

const COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d"];

const base = () => new URL(document.baseURI).pathname.replace(/\/$/, "");

const api = async <T,>(path: string): Promise<T> => {
  const r = await fetch(`${base()}/lakefs-gc/api${path}`, { credentials: "same-origin" });
  if (!r.ok) {
    let detail = `${r.status} ${r.statusText}`;
    try {
      const body = await r.json();
      detail += body?.detail ? `: ${typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)}` : "";
    } catch {
      /* not JSON */
    }
    throw new Error(detail);
  }
  return (await r.json()) as T;
};

const n = (v: number | null | undefined) => (v === null || v === undefined ? "" : v.toLocaleString("en-US"));

const bytes = (v: number | null | undefined) => {
  if (v === null || v === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let x = v;
  let i = 0;
  while (x >= 1024 && i < units.length - 1) {
    x /= 1024;
    i += 1;
  }
  return i === 0 ? `${v} B` : `${x.toFixed(1)} ${units[i]}`;
};

const when = (iso: string | null | undefined) => (iso ? iso.replace("T", " ").replace(/\.\d+/, "").replace("+00:00", "Z") : "");

const runUrl = (dagId: string, runId: string) => `${base()}/dags/${encodeURIComponent(dagId)}/runs/${encodeURIComponent(runId)}`;
const taskUrl = (dagId: string, runId: string, task: string) => `${runUrl(dagId, runId)}/tasks/${encodeURIComponent(task)}`;

const outcome = (r: Run): { label: string; palette: string } => {
  if (r.report === null) {
    const state = r.dag_run?.state ?? "unknown";
    if (state === "failed") return { label: "refused or failed: no report", palette: "red" };
    return { label: `${state}: no report yet`, palette: "gray" };
  }
  if (r.problem) return { label: "report unreadable", palette: "red" };
  if (!r.success) return { label: "not complete", palette: "orange" };
  if (r.dry_run) return { label: "dry run", palette: "blue" };
  if (r.delete_skipped) return { label: `marked (${r.mode})`, palette: "blue" };
  if ((r.held_back ?? 0) > 0 && (r.deleted ?? 0) === 0) return { label: "held back", palette: "yellow" };
  return { label: "swept", palette: "green" };
};

const ChartBox = ({ title, build }: { title: string; build: (c: HTMLCanvasElement) => Chart }) => {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    if (!canvas.current) return undefined;
    const chart = build(canvas.current);
    return () => chart.destroy();
  }, [build]);
  return (
    <Box borderWidth="1px" borderRadius="md" p={3} minH="260px">
      <Text fontWeight="bold" mb={2}>{title}</Text>
      <Box position="relative" h="220px">
        <canvas ref={canvas} aria-label={title} role="img" />
      </Box>
    </Box>
  );
};

// steps: the DAG's tasks whose seconds a report records, in their order (the API's, from the provider's table)
const Charts = ({ runs, steps }: { runs: Run[]; steps: string[] }) => {
  const shown = runs.filter((r) => r.report !== null && !r.problem).slice().reverse(); // oldest first
  const labels = shown.map((r) => when(r.start_time).slice(0, 16));
  const common = { responsive: true, maintainAspectRatio: false, animation: false as const };
  const objects = (c: HTMLCanvasElement) =>
    new Chart(c, {
      type: "bar",
      data: {
        labels,
        datasets: [
          { label: "candidates", data: shown.map((r) => r.candidates ?? 0), backgroundColor: COLORS[0] },
          { label: "deleted", data: shown.map((r) => r.deleted ?? 0), backgroundColor: COLORS[2] },
          { label: "already gone", data: shown.map((r) => r.already_gone ?? 0), backgroundColor: COLORS[4] },
          { label: "held back", data: shown.map((r) => r.held_back ?? 0), backgroundColor: COLORS[1] },
          { label: "dead letters", data: shown.map((r) => r.delete_failed ?? 0), backgroundColor: COLORS[3] },
        ],
      },
      options: { ...common, scales: { y: { beginAtZero: true, title: { display: true, text: "objects" } } } },
    });
  // reclaimed in the unit that suits the largest run (B, KiB, MiB, GiB, TiB)
  const most = Math.max(0, ...shown.map((r) => r.reclaimed_bytes ?? 0));
  const unit = Math.min(4, Math.max(0, Math.floor(Math.log(Math.max(most, 1)) / Math.log(1024))));
  const unitName = ["B", "KiB", "MiB", "GiB", "TiB"][unit];
  const listed = (c: HTMLCanvasElement) =>
    new Chart(c, {
      type: "line",
      data: {
        labels,
        datasets: [
          { label: "listed objects", data: shown.map((r) => r.listed_objects ?? null), borderColor: COLORS[0], yAxisID: "y" },
          { label: `reclaimed (${unitName})`, data: shown.map((r) => (r.reclaimed_bytes ?? 0) / 1024 ** unit),
            borderColor: COLORS[2], yAxisID: "y1" },
        ],
      },
      options: {
        ...common,
        scales: {
          y: { beginAtZero: true, title: { display: true, text: "listed objects" } },
          y1: { beginAtZero: true, position: "right", title: { display: true, text: `reclaimed ${unitName}` },
                grid: { drawOnChartArea: false } },
        },
      },
    });
  const durations = (c: HTMLCanvasElement) =>
    new Chart(c, {
      type: "bar",
      data: {
        labels,
        datasets: steps.map((s, i) => ({ label: s, data: shown.map((r) => r.seconds?.[s] ?? 0), backgroundColor: COLORS[i] })),
      },
      options: { ...common, scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: { display: true, text: "seconds" } } } },
    });
  if (shown.length === 0) return <Text>No GC report in this repository's namespace yet.</Text>;
  return (
    <SimpleGrid columns={{ base: 1, xl: 3 }} gap={4} data-testid="gc-charts">
      <ChartBox key={`o${shown.length}`} title="Objects per run" build={objects} />
      <ChartBox key={`l${shown.length}`} title="Listed and reclaimed" build={listed} />
      <ChartBox key={`d${shown.length}`} title="Seconds per step" build={durations} />
    </SimpleGrid>
  );
};

// Where the bytes go: the newest run's attribution (space.json), by class and by branch; the stale branches
const CLASS_LABELS: [string, string][] = [["head", "read by a branch HEAD"], ["retention", "only in retention windows"],
  ["staged", "only staged"], ["deleted", "unreferenced: deleted this run"], ["held_back", "unreferenced: held back"],
  ["young", "unreferenced: too young"]];

const unitOf = (most: number) => Math.min(4, Math.max(0, Math.floor(Math.log(Math.max(most, 1)) / Math.log(1024))));

const SpaceView = ({ space, dagId }: { space: SpaceDoc; dagId: string }) => {
  const a = space.attribution;
  if (space.problem || !a) return <Text color="red.500" data-testid="gc-space">Where the bytes go: {space.problem}</Text>;
  const common = { responsive: true, maintainAspectRatio: false, animation: false as const };
  const branches = Object.keys(a.branches).sort();
  const most = Math.max(a.total.bytes, 1);
  const unit = unitOf(most);
  const unitName = ["B", "KiB", "MiB", "GiB", "TiB"][unit];
  const v = (x: number) => x / 1024 ** unit;
  const byClass = (c: HTMLCanvasElement) =>
    new Chart(c, {
      type: "bar",
      data: { labels: CLASS_LABELS.map(([, l]) => l),
        datasets: [{ label: unitName, data: CLASS_LABELS.map(([k]) => v(a.classes[k]?.bytes ?? 0)),
          backgroundColor: CLASS_LABELS.map((_, i) => COLORS[i % COLORS.length]) }] },
      options: { ...common, indexAxis: "y" as const, plugins: { legend: { display: false } },
        scales: { x: { beginAtZero: true, title: { display: true, text: unitName } } } },
    });
  const series: [string, "alone" | "shared", string][] = [["head", "alone", "HEAD, alone"], ["head", "shared", "HEAD, shared"],
    ["retention", "alone", "retention, alone"], ["retention", "shared", "retention, shared"],
    ["staged", "alone", "staged, alone"], ["staged", "shared", "staged, shared"]];
  const byBranch = (c: HTMLCanvasElement) =>
    new Chart(c, {
      type: "bar",
      data: { labels: branches,
        datasets: series.map(([cls, how, label], i) => ({ label, data: branches.map((b) => v(a.branches[b][how][cls]?.bytes ?? 0)),
          // shared: the class's colour, lighter (the same object may be in other branches' bars too)
          backgroundColor: COLORS[Math.floor(i / 2)] + (how === "shared" ? "66" : ""), borderColor: COLORS[Math.floor(i / 2)],
          borderWidth: how === "shared" ? 1 : 0,
          stack: how })) },
      options: { ...common, scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: { display: true, text: unitName } } } },
    });
  const stale = space.stale ?? [];
  const tags = Object.entries(a.tags);
  return (
    <Box borderWidth="1px" borderRadius="md" p={3} data-testid="gc-space" data-mark={space.mark_id}>
      <Heading size="sm" mb={1}>Where the bytes go</Heading>
      <Text fontSize="sm" mb={2}>
        As run {space.airflow_run_id ?? space.mark_id} found the namespace ({when(space.computed_at)}): {n(a.total.objects)} objects,{" "}
        {bytes(a.total.bytes)}. Retention: default {space.rules?.default_days} days
        {Object.entries(space.rules?.branches ?? {}).map(([b, d]) => `, ${b} ${d} days`).join("")}. Each object is counted once, in
        its first class; a branch&apos;s shared figure counts what other branches hold too.
      </Text>
      <SimpleGrid columns={{ base: 1, xl: 2 }} gap={4}>
        <ChartBox key={`c${space.mark_id}`} title="Space by class" build={byClass} />
        <ChartBox key={`b${space.mark_id}`} title="Space by branch (alone and shared)" build={byBranch} />
      </SimpleGrid>
      {tags.length ? (
        <Text fontSize="sm" mt={2} data-testid="gc-space-tags">
          Read only by a tag&apos;s commit (lakeFS&apos;s GC keeps no commit for a tag):{" "}
          {tags.map(([t, s]) => `${t} ${n(s.objects)} objects, ${bytes(s.bytes)}`).join("; ")}
        </Text>
      ) : null}
      <Text fontWeight="bold" mt={3} mb={1}>Stale branches (HEAD older than {space.stale_branch_days} days), by what they alone hold</Text>
      {stale.length ? (
        <Table.Root size="sm" striped data-testid="gc-stale">
          <Table.Header>
            <Table.Row>
              {["branch", "HEAD age (days)", "objects alone", "bytes alone"].map((h) => <Table.ColumnHeader key={h}>{h}</Table.ColumnHeader>)}
            </Table.Row>
          </Table.Header>
          <Table.Body>
            {stale.map((b) => (
              <Table.Row key={b.branch} data-branch={b.branch}>
                <Table.Cell>{b.branch}</Table.Cell>
                <Table.Cell>{b.head_age_days.toFixed(0)}</Table.Cell>
                <Table.Cell data-col="objects">{n(b.alone.objects)}</Table.Cell>
                <Table.Cell data-col="bytes" title={`${n(b.alone.bytes)} bytes`}>{bytes(b.alone.bytes)}</Table.Cell>
              </Table.Row>
            ))}
          </Table.Body>
        </Table.Root>
      ) : <Text fontSize="sm" data-testid="gc-stale">None.</Text>}
      <WhatIf dagId={dagId} branches={branches} />
    </Box>
  );
};

// lakefs-gc whatif: what the next run would free if a branch were deleted or a rule changed (nothing changes)
const WhatIf = ({ dagId, branches }: { dagId: string; branches: string[] }) => {
  const [kind, setKind] = useState<"delete" | "rule">("delete");
  const [branch, setBranch] = useState(branches[0] ?? "");
  const [days, setDays] = useState("");
  const [answer, setAnswer] = useState<WhatIfAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const ask = () => {
    setBusy(true);
    setError(null);
    setAnswer(null);
    const q = new URLSearchParams(kind === "delete" ? { delete_branch: branch.trim() }
      : { rule: branch.trim() ? `${branch.trim()}=${days.trim()}` : days.trim() });
    api<WhatIfAnswer>(`/dags/${encodeURIComponent(dagId)}/whatif?${q}`)
      .then(setAnswer)
      .catch((e: Error) => setError(e.message))
      .finally(() => setBusy(false));
  };
  return (
    <Box mt={3} data-testid="gc-whatif">
      <Text fontWeight="bold" mb={1}>What if</Text>
      <HStack gap={2} mb={2} as="form" onSubmit={(e: React.FormEvent) => { e.preventDefault(); ask(); }}>
        <select value={kind} data-testid="gc-whatif-kind" style={{ border: "1px solid #ccc", padding: "2px 4px" }}
          onChange={(e: React.ChangeEvent<HTMLSelectElement>) => setKind(e.target.value as "delete" | "rule")}>
          <option value="delete">branch deleted</option>
          <option value="rule">retention rule set to</option>
        </select>
        <Input size="sm" flex="2" placeholder={kind === "delete" ? "branch" : "branch (empty: the default rule)"} value={branch}
          onChange={(e: React.ChangeEvent<HTMLInputElement>) => setBranch(e.target.value)} data-testid="gc-whatif-branch" />
        {kind === "rule" ? (
          <Input size="sm" flex="1" placeholder="days" value={days} data-testid="gc-whatif-days"
            onChange={(e: React.ChangeEvent<HTMLInputElement>) => setDays(e.target.value)} />
        ) : null}
        <Button size="sm" type="submit" loading={busy} data-testid="gc-whatif-go">Price it</Button>
      </HStack>
      {error ? <Text color="red.500" data-testid="gc-whatif-error">{error}</Text> : null}
      {answer ? (
        <Box as="pre" fontFamily="mono" fontSize="sm" whiteSpace="pre-wrap" data-testid="gc-whatif-answer">{answer.lines.join("\n")}</Box>
      ) : null}
    </Box>
  );
};

const Latest = ({ run, dagId }: { run: Run; dagId: string }) => {
  const o = outcome(run);
  const airflowRun = run.airflow_run_id;
  return (
    <Box borderWidth="1px" borderRadius="md" p={3} data-testid="gc-latest">
      <HStack mb={2} gap={3} wrap="wrap">
        <Text fontWeight="bold">Latest report</Text>
        <Badge colorPalette={o.palette}>{o.label}</Badge>
        {airflowRun ? <Link href={runUrl(dagId, airflowRun)} color="blue.500">DAG run {airflowRun}</Link> : null}
        {airflowRun && run.report ? (
          <Link href={taskUrl(dagId, airflowRun, "save_report")} color="blue.500">save_report log</Link>
        ) : null}
      </HStack>
      {run.unsafe_min_age_override ? (
        <Text color="red.500" fontWeight="bold" mb={2}>
          This run used unsafe_min_age_override: its minimum age was below lakeFS's grace period.
        </Text>
      ) : null}
      {run.rows.length ? (
        <Box as="pre" whiteSpace="pre-wrap" wordBreak="break-word" fontFamily="mono" fontSize="sm" data-testid="gc-summary">
          {run.rows.map(([label, value]) => `${label}: ${value}`).join("\n")}
        </Box>
      ) : (
        <Text>{run.problem ?? "No report: the run was refused or failed before it marked; see its task logs."}</Text>
      )}
      {run.rules ? (
        <Text mt={2} fontSize="sm">
          Rules in force: minimum age {n(Number(run.rules.effective_min_age_seconds ?? 0))} s (lakeFS grace period{" "}
          {n(Number(run.rules.grace_period_seconds ?? 0))} s), delayed confirmation {n(Number(run.rules.confirm_after_seconds ?? 0))} s,
          staged check {String(run.rules.staged_check ?? "")}; guard: at most{" "}
          {run.guard?.max_delete_share !== null && run.guard?.max_delete_share !== undefined
            ? `${(run.guard.max_delete_share * 100).toFixed(0)}% of the listed objects`
            : "no share limit"}
          {run.guard?.max_delete_count ? `, ${n(run.guard.max_delete_count)} objects` : ""} per run.
        </Text>
      ) : null}
    </Box>
  );
};

/** A DAG run's wall time in seconds: start to end, or to now while it runs; null without a start. */
const wallSeconds = (d: DagRun | null): number | null => {
  if (!d?.start_date) return null;
  const end = d.end_date ? Date.parse(d.end_date) : Date.now();
  const s = (end - Date.parse(d.start_date)) / 1000;
  return Number.isFinite(s) && s >= 0 ? s : null;
};

const RunsTable = ({ runs, dagId }: { runs: Run[]; dagId: string }) => (
  <Table.Root size="sm" striped data-testid="gc-runs">
    <Table.Header>
      <Table.Row>
        {["started", "DAG run", "mode / flow", "outcome", "listed", "candidates", "deleted", "already gone", "held back",
          "dead letters", "reclaimed", "wall s (DAG run)", "work s (in steps)", "report"].map((h) => (
          <Table.ColumnHeader key={h}>{h}</Table.ColumnHeader>
        ))}
      </Table.Row>
    </Table.Header>
    <Table.Body>
      {runs.map((r) => {
        const o = outcome(r);
        const total = Object.values(r.seconds ?? {}).reduce((a, b) => a + b, 0);
        const wall = wallSeconds(r.dag_run);
        const id = r.airflow_run_id;
        return (
          <Table.Row key={`${r.mark_id ?? ""}/${r.sweep ?? ""}/${id ?? ""}`} data-run={id ?? ""} data-mark={r.mark_id ?? ""}>
            <Table.Cell>{when(r.start_time)}</Table.Cell>
            <Table.Cell>
              {id && r.dag_run ? <Link href={runUrl(dagId, id)} color="blue.500">{id}</Link> : id}
              {id && r.dag_run?.failed_tasks?.length
                ? r.dag_run.failed_tasks.map((t) => (
                    <Text key={t} fontSize="xs">
                      <Link href={taskUrl(dagId, id, t)} color="red.500">{t} log</Link>
                    </Text>
                  ))
                : null}
            </Table.Cell>
            <Table.Cell>{[r.mode, r.flow].filter(Boolean).join(" / ")}{r.sweep ? ` (sweep ${r.sweep})` : ""}</Table.Cell>
            <Table.Cell><Badge colorPalette={o.palette}>{o.label}</Badge></Table.Cell>
            <Table.Cell data-col="listed">{n(r.listed_objects)}</Table.Cell>
            <Table.Cell data-col="candidates">{n(r.candidates)}</Table.Cell>
            <Table.Cell data-col="deleted">{r.dry_run && r.would_delete !== undefined ? `0 (would ${n(r.would_delete)})` : n(r.deleted)}</Table.Cell>
            <Table.Cell data-col="already_gone">{n(r.already_gone)}</Table.Cell>
            <Table.Cell data-col="held_back">
              {n(r.held_back)}
              {r.held_back && r.held_back_until ? <Text fontSize="xs">until {when(r.held_back_until)}</Text> : null}
            </Table.Cell>
            <Table.Cell data-col="dead_letters">{n(r.delete_failed)}</Table.Cell>
            <Table.Cell data-col="reclaimed">{bytes(r.reclaimed_bytes)}</Table.Cell>
            <Table.Cell data-col="wall_seconds"
              title="the DAG run's wall time, start to end (to now while it runs): every task's start, waits and work">
              {wall === null ? "" : wall.toFixed(1)}
            </Table.Cell>
            <Table.Cell data-col="work_seconds" title="the seconds of work inside the GC steps, as the report records them">
              {total ? total.toFixed(1) : ""}
            </Table.Cell>
            <Table.Cell>{r.report ? <Code fontSize="xs" whiteSpace="normal" wordBreak="break-all">{r.report}</Code> : ""}</Table.Cell>
          </Table.Row>
        );
      })}
    </Table.Body>
  </Table.Root>
);

// lakefs-gc explain for one address (or a logical path on a ref): what the GC decided and why
const Explain = ({ dagId }: { dagId: string }) => {
  const [target, setTarget] = useState("");
  const [ref, setRef] = useState("");
  const [answer, setAnswer] = useState<ExplainAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const ask = () => {
    if (!target.trim()) return;
    setBusy(true);
    setError(null);
    setAnswer(null);
    const q = new URLSearchParams({ target: target.trim(), ...(ref.trim() ? { ref: ref.trim() } : {}) });
    api<ExplainAnswer>(`/dags/${encodeURIComponent(dagId)}/explain?${q}`)
      .then(setAnswer)
      .catch((e: Error) => setError(e.message))
      .finally(() => setBusy(false));
  };
  return (
    <Box borderWidth="1px" borderRadius="md" p={3} data-testid="gc-explain">
      <Heading size="sm" mb={2}>Explain an address</Heading>
      <HStack gap={2} mb={2} as="form" onSubmit={(e: React.FormEvent) => { e.preventDefault(); ask(); }}>
        <Input size="sm" flex="3" placeholder="a physical address (data/<slice>/<id> or its URI), or a logical path"
          value={target} onChange={(e: React.ChangeEvent<HTMLInputElement>) => setTarget(e.target.value)} data-testid="gc-explain-target" />
        <Input size="sm" flex="1" placeholder="ref for a path (default branch)" value={ref}
          onChange={(e: React.ChangeEvent<HTMLInputElement>) => setRef(e.target.value)} />
        <Button size="sm" type="submit" loading={busy} data-testid="gc-explain-go">Explain</Button>
      </HStack>
      {error ? <Text color="red.500" data-testid="gc-explain-error">{error}</Text> : null}
      {answer ? (
        <Box as="pre" fontFamily="mono" fontSize="sm" whiteSpace="pre-wrap" wordBreak="break-word" data-testid="gc-explain-answer">
          {[answer.note, ...answer.lines].filter(Boolean).join("\n")}
        </Box>
      ) : null}
    </Box>
  );
};

// ---------------------------------------------------------------------------------------------
// Run GC: the DAG's trigger form, checked field by field before anything is sent. Airflow 3.3's own
// trigger form checks only required fields on the client: a number outside its Param's range comes
// back from the server as a "Bad Request" toast over a dialog whose message names only the first
// bad Param. Here every field is checked against its Param's JSON schema as it is typed (type,
// enum, minimum and maximum, also inside allOf, minLength), turns red with its reason, and Run
// stays disabled until every field is good; what the server still refuses lands on its field.
type ParamSpec = { value: unknown; schema: Record<string, unknown>; description: string | null };
type Schema = Record<string, unknown>;

const bounds = (s: Schema): { min?: number; max?: number } => {
  const parts = [s, ...(((s.allOf as Schema[] | undefined) ?? []))];
  const out: { min?: number; max?: number } = {};
  for (const x of parts) {
    if (typeof x.minimum === "number") out.min = Math.max(out.min ?? -Infinity, x.minimum);
    if (typeof x.maximum === "number") out.max = Math.min(out.max ?? Infinity, x.maximum);
  }
  return out;
};

const types = (s: Schema): string[] => (Array.isArray(s.type) ? (s.type as string[]) : s.type ? [s.type as string] : []);

/** The value typed into a field, as the Param's type wants it, or why it cannot be. */
const checkParam = (text: string, s: Schema): { value?: unknown; error?: string } => {
  const ts = types(s);
  if (text.trim() === "") {
    return ts.includes("null") ? { value: null } : { error: "required: give a value" };
  }
  if (Array.isArray(s.enum)) {
    return (s.enum as unknown[]).includes(text) ? { value: text } : { error: `must be one of ${(s.enum as unknown[]).join(", ")}` };
  }
  if (ts.includes("integer") || ts.includes("number")) {
    const v = Number(text.trim());
    if (!Number.isFinite(v)) return { error: `must be a number, got ${JSON.stringify(text)}` };
    if (!ts.includes("number") && !Number.isInteger(v)) return { error: `must be a whole number, got ${text}` };
    const { min, max } = bounds(s);
    if (min !== undefined && v < min) return { error: `must be at least ${min}, got ${v}` };
    if (max !== undefined && v > max) return { error: `must be at most ${max}, got ${v}` };
    return { value: v };
  }
  if (typeof s.minLength === "number" && text.length < s.minLength) return { error: `must have at least ${s.minLength} characters` };
  return { value: text };
};

const asText = (v: unknown) => (v === null || v === undefined ? "" : String(v));

const TriggerForm = ({ dagId, onTriggered }: { dagId: string; onTriggered: () => void }) => {
  const [params, setParams] = useState<Record<string, ParamSpec> | null>(null);
  const [paused, setPaused] = useState(false);
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [flags, setFlags] = useState<Record<string, boolean>>({});
  const [serverErrors, setServerErrors] = useState<Record<string, string>>({});
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
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
          setMessage({ ok: true, text: `run ${body.dag_run_id} created${paused ? " (the DAG is paused: it runs once you unpause it)" : ""}` });
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
              <Box key={k} data-testid={`gc-param-${k}`} data-invalid={errors[k] ? "true" : undefined}>
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
                    borderColor={errors[k] ? "red.500" : undefined} borderWidth={errors[k] ? "2px" : undefined}
                    onChange={(e: React.ChangeEvent<HTMLInputElement>) => { setTexts({ ...texts, [k]: e.target.value }); setServerErrors({}); }} />
                )}
                {errors[k] ? <Text color="red.500" fontSize="sm" data-testid={`gc-param-error-${k}`}>{errors[k]}</Text> : null}
                {p.description ? <Text fontSize="xs" color="gray.600">{p.description}</Text> : null}
              </Box>
            ))}
          </SimpleGrid>
          <HStack mt={3} gap={3}>
            <Button size="sm" onClick={run} loading={busy} disabled={bad.length > 0} data-testid="gc-trigger-run">Run</Button>
            {bad.length ? <Text color="red.500" fontSize="sm">Fix {bad.join(", ")} first.</Text> : null}
            {message ? <Text color={message.ok ? "green.600" : "red.500"} fontSize="sm" data-testid="gc-trigger-message">{message.text}</Text> : null}
          </HStack>
        </Box>
      ) : open ? (message ? <Text color="red.500">{message.text}</Text> : <Spinner />) : null}
    </Box>
  );
};

const Repository = ({ dagId }: { dagId: string }) => {
  const [answer, setAnswer] = useState<RunsAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reload, setReload] = useState(0);
  useEffect(() => {
    setAnswer(null);
    setError(null);
    api<RunsAnswer>(`/dags/${encodeURIComponent(dagId)}/runs`).then(setAnswer).catch((e: Error) => setError(e.message));
  }, [dagId, reload]);
  if (error) return <Text color="red.500">The GC runs of {dagId} cannot be shown: {error}</Text>;
  if (!answer) return <Spinner />;
  const newest = answer.runs[0];
  const latest = answer.runs.find((r) => r.report !== null && !r.problem); // the newest with a report
  return (
    <Box display="flex" flexDirection="column" gap={4} data-testid="gc-repository" data-dag={dagId}>
      <Text>
        Repository <b>{answer.repository}</b>
        {answer.namespace ? <> on <Code>{answer.namespace}</Code></> : null}: {answer.runs.length} run(s), newest first.
      </Text>
      {answer.error ? <Text color="red.500">{answer.error}</Text> : null}
      {newest && newest !== latest && newest.airflow_run_id ? (
        <Text color={newest.dag_run?.state === "failed" ? "red.500" : undefined} data-testid="gc-newest">
          The newest run, {newest.airflow_run_id}, has no report ({outcome(newest).label})
          {newest.dag_run?.failed_tasks?.length ? (
            <>
              : see{" "}
              {newest.dag_run.failed_tasks.map((t) => (
                <Link key={t} href={taskUrl(dagId, newest.airflow_run_id ?? "", t)} color="red.500" mr={2}>{t} log</Link>
              ))}
            </>
          ) : null}
        </Text>
      ) : null}
      <Charts runs={answer.runs} steps={answer.steps ?? []} />
      <TriggerForm dagId={dagId} onTriggered={() => window.setTimeout(() => setReload((x) => x + 1), 1500)} />
      <Explain dagId={dagId} />
      {answer.space ? <SpaceView space={answer.space} dagId={dagId} /> : null}
      {latest ? <Latest run={latest} dagId={dagId} /> : <Text>No report of {dagId} yet.</Text>}
      <Box overflowX="auto"><RunsTable runs={answer.runs} dagId={dagId} /></Box>
      <Text fontSize="xs" color="gray.500" data-testid="gc-version">
        lakefs-gc {answer.version ?? "?"}: wall s is the DAG run's, start to end; work s the GC steps' own.
      </Text>
    </Box>
  );
};

type Removed = { repository: string; dag_id: string; lakefs_conn_id: string; removed_at: string };

const GCPage = ({ dagId }: Props) => {
  const [repos, setRepos] = useState<Repo[] | null>(null);
  const [errors, setErrors] = useState<string[]>([]);
  const [removed, setRemoved] = useState<Removed[]>([]);
  const [chosen, setChosen] = useState<string | undefined>(dagId);
  useEffect(() => {
    if (dagId) return;
    api<{ repositories: Repo[]; errors: string[]; removed?: Removed[] }>("/repositories")
      .then((a) => {
        setRepos(a.repositories);
        setErrors(a.errors ?? []);
        setRemoved(a.removed ?? []);
        setChosen((c) => c ?? a.repositories[0]?.dag_id);
      })
      .catch((e: Error) => setErrors([e.message]));
  }, [dagId]);
  return (
    <Box p={4} data-testid="gc-page">
      <Heading size="lg" mb={3}>lakeFS garbage collection</Heading>
      {errors.map((e) => <Text key={e} color="red.500">{e}</Text>)}
      {removed.map((r) => (
        <Text key={r.repository} color="gray.600" data-testid="gc-removed-repository">
          {r.repository}: gone from lakeFS ({r.lakefs_conn_id}) since {r.removed_at}; its GC DAG {r.dag_id} is no
          longer built (its reports stay in its namespace).
        </Text>
      ))}
      {!dagId && repos ? (
        <HStack mb={4} gap={2} wrap="wrap">
          {repos.map((r) => (
            <Button key={r.dag_id} size="sm" variant={r.dag_id === chosen ? "solid" : "outline"} onClick={() => setChosen(r.dag_id)}>
              {r.repository}
            </Button>
          ))}
          {repos.length === 0 ? <Text>No GC repository you may read is configured.</Text> : null}
        </HStack>
      ) : null}
      {!dagId && !repos && errors.length === 0 ? <Spinner /> : null}
      {chosen ? <Repository dagId={chosen} /> : null}
    </Box>
  );
};

export default GCPage;
