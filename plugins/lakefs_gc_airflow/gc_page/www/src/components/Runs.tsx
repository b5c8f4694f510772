// The runs: the latest report in detail (Latest, with the newest run above it when that one has no
// report) and every run in a table (RunsTable), each with its outcome (a badge, and for a failed run
// the one line its failed task left on why) and links to its DAG run and task logs.
import { Badge, Box, Code, HStack, Link, Table, Text } from "@chakra-ui/react";
import { bytes, n, runUrl, taskUrl, when } from "../api";
import type { DagRun, Run } from "../types";
import { CostCell } from "./Cost";
import { ListingCell } from "./Inventory";

/** Why a failed run failed, as its task said (the API's dag_run.reason); null for any other run. */
export const failure = (r: Run) => (r.dag_run?.state === "failed" ? r.dag_run.reason : null);

export const outcome = (r: Run): { label: string; palette: string } => {
  const why = failure(r);
  if (r.report === null) {
    const state = r.dag_run?.state ?? "unknown";
    if (why) return { label: why.refused ? `refused by ${why.task_id}` : `failed in ${why.task_id}`, palette: "red" };
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

/** The failed tasks' log links of a run, one after the other. */
const TaskLogs = ({ run, dagId }: { run: Run; dagId: string }) => {
  const id = run.airflow_run_id;
  if (!id || !run.dag_run?.failed_tasks?.length) return null;
  return (
    <>
      {run.dag_run.failed_tasks.map((t, i) => (
        <span key={t}>{i ? ", " : ""}<Link href={taskUrl(dagId, id, t)} color="red.500">{t} log</Link></span>
      ))}
    </>
  );
};

/** The newest run when it has no report (refused, failed, still running): what happened, and why when its task said. */
const Newest = ({ run, dagId }: { run: Run; dagId: string }) => {
  const id = run.airflow_run_id ?? "";
  const why = failure(run);
  const failed = run.dag_run?.state === "failed";
  return (
    <Box mb={2} color={failed ? "red.600" : undefined} data-testid="gc-newest" data-run={id}>
      <Text>
        The newest run, <Link href={runUrl(dagId, id)} color="blue.500">{id}</Link>,{" "}
        {why ? (
          <>{why.refused ? "was refused by" : "failed in"} <Code>{why.task_id}</Code>: <span data-testid="gc-newest-reason">{why.reason}</span></>
        ) : `has no report (${outcome(run).label})`}
        {run.dag_run?.failed_tasks?.length ? <>{" "}(see <TaskLogs run={run} dagId={dagId} />)</> : null}
      </Text>
    </Box>
  );
};

// run: the newest run with a report that reads (none yet: undefined); newest: the newest run of all
export const Latest = ({ run, newest, dagId }: { run?: Run; newest?: Run; dagId: string }) => (
  <Box borderWidth="1px" borderRadius="md" p={3} data-testid="gc-latest">
    {newest && newest !== run && newest.airflow_run_id ? <Newest run={newest} dagId={dagId} /> : null}
    {run ? <Report run={run} dagId={dagId} />
      : <Text>No report yet: no run has written one to the repository&apos;s namespace.</Text>}
  </Box>
);

const Report = ({ run, dagId }: { run: Run; dagId: string }) => {
  const o = outcome(run);
  const airflowRun = run.airflow_run_id;
  return (
    <Box>
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

/** The reclaimed bytes as the bill sees them: freed now, on each date, still billed ("" for a run without them). */
export const freedText = (r: Run): string => {
  if (!r.freeing) return "";
  if (r.freed_now_bytes === null || r.freed_now_bytes === undefined) {
    return r.freeing.when === "never" ? "deletes here free nothing until someone acts" : "";
  }
  const later = (r.freed_later ?? []).map((x) => `${bytes(x.bytes)} on ${when(x.on).slice(0, 10)}`).join(", ");
  return `now ${bytes(r.freed_now_bytes)}${later ? `, later ${later}` : ""}, still billed ${bytes(r.still_billed_bytes ?? 0)}`;
};

/** A DAG run's wall time in seconds: start to end, or to now while it runs; null without a start. */
const wallSeconds = (d: DagRun | null): number | null => {
  if (!d?.start_date) return null;
  const end = d.end_date ? Date.parse(d.end_date) : Date.now();
  const s = (end - Date.parse(d.start_date)) / 1000;
  return Number.isFinite(s) && s >= 0 ? s : null;
};

export const RunsTable = ({ runs, dagId }: { runs: Run[]; dagId: string }) => (runs.length === 0 ? (
  <Text data-testid="gc-runs" data-empty="true" color="gray.600">No GC run yet: trigger one with the Run GC form above.</Text>
) : (
  <Table.Root size="sm" striped data-testid="gc-runs">
    <Table.Header>
      <Table.Row>
        {["started", "DAG run", "mode / flow", "outcome", "listed", "listing", "candidates", "deleted", "already gone", "held back",
          "dead letters", "reclaimed", "freed (bill)", "cost", "wall s (DAG run)", "work s (in steps)", "report"].map((h) => (
          <Table.ColumnHeader key={h}>{h}</Table.ColumnHeader>
        ))}
      </Table.Row>
    </Table.Header>
    <Table.Body>
      {runs.map((r) => {
        const o = outcome(r);
        const why = failure(r);
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
            <Table.Cell data-col="outcome" minW={why ? "16em" : undefined} maxW="30em" whiteSpace="normal">
              <Badge colorPalette={o.palette}>{o.label}</Badge>
              {why ? <Text fontSize="xs" color="red.600" mt={1} data-testid="gc-run-reason">{why.reason}</Text> : null}
            </Table.Cell>
            <Table.Cell data-col="listed">{n(r.listed_objects)}</Table.Cell>
            <Table.Cell data-col="listing" minW={r.listing ? "14em" : undefined} maxW="24em" whiteSpace="normal">
              <ListingCell run={r} />
            </Table.Cell>
            <Table.Cell data-col="candidates">{n(r.candidates)}</Table.Cell>
            <Table.Cell data-col="deleted">{r.dry_run && r.would_delete !== undefined ? `0 (would ${n(r.would_delete)})` : n(r.deleted)}</Table.Cell>
            <Table.Cell data-col="already_gone">{n(r.already_gone)}</Table.Cell>
            <Table.Cell data-col="held_back">
              {n(r.held_back)}
              {r.held_back && r.held_back_until ? <Text fontSize="xs">until {when(r.held_back_until)}</Text> : null}
            </Table.Cell>
            <Table.Cell data-col="dead_letters">{n(r.delete_failed)}</Table.Cell>
            <Table.Cell data-col="reclaimed">{bytes(r.reclaimed_bytes)}</Table.Cell>
            <Table.Cell data-col="freed" title={r.freeing ? `${r.freeing.how}: ${r.freeing.detail}` : undefined}
              minW={r.freeing ? "12em" : undefined} whiteSpace="normal">
              {freedText(r)}
              {r.freeing?.when === "never" ? <Badge ml={1} colorPalette="orange">still billed</Badge> : null}
            </Table.Cell>
            <Table.Cell data-col="cost" whiteSpace="nowrap"><CostCell run={r} /></Table.Cell>
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
));
