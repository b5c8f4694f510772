// One repository: its runs over time, the trigger form, explain, where the bytes go, the latest
// report and every run.
import { Box, Code, Link, Spinner, Text } from "@chakra-ui/react";
import { useEffect, useState } from "react";
import { api, taskUrl } from "../api";
import { Charts } from "../components/Charts";
import { Explain } from "../components/Explain";
import { Latest, outcome, RunsTable } from "../components/Runs";
import { SpaceView } from "../components/SpaceView";
import { TriggerForm } from "../components/TriggerForm";
import type { RunsAnswer } from "../types";

export const Repository = ({ dagId }: { dagId: string }) => {
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
