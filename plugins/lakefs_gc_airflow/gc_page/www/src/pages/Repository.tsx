// One repository: its runs over time, the trigger form, explain, where the bytes go, the latest
// report and every run.
import { Box, Code, Spinner, Text } from "@chakra-ui/react";
import { useEffect, useState } from "react";
import { api, plural } from "../api";
import { Charts } from "../components/Charts";
import { Explain } from "../components/Explain";
import { RepoInventory } from "../components/Inventory";
import { Latest, RunsTable } from "../components/Runs";
import { SpaceView } from "../components/SpaceView";
import { TriggerForm } from "../components/TriggerForm";
import type { RunsAnswer } from "../types";

export const Repository = ({ dagId }: { dagId: string }) => {
  const [answer, setAnswer] = useState<RunsAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reload, setReload] = useState(0);
  useEffect(() => {
    setAnswer(null); // another repository: nothing of the last one's shown meanwhile
    setError(null);
  }, [dagId]);
  useEffect(() => {
    // a reload after Run keeps the page as it is until the answer comes (the form and its notice stay)
    let current = true; // an answer for a repository no longer shown is dropped
    api<RunsAnswer>(`/dags/${encodeURIComponent(dagId)}/runs`)
      .then((a) => { if (current) { setAnswer(a); setError(null); } })
      .catch((e: Error) => { if (current) setError(e.message); });
    return () => { current = false; };
  }, [dagId, reload]);
  if (error) return <Text color="red.500">The GC runs of {dagId} cannot be shown: {error}</Text>;
  if (!answer) return <Spinner />;
  const none = answer.runs.length === 0;
  const latest = answer.runs.find((r) => r.report !== null && !r.problem); // the newest with a report
  const grace = answer.grace_period_seconds === null || answer.grace_period_seconds === undefined ? null
    : { seconds: answer.grace_period_seconds, source: answer.grace_period_source ?? null };
  return (
    <Box display="flex" flexDirection="column" gap={4} data-testid="gc-repository" data-dag={dagId}>
      <Text>
        Repository <b>{answer.repository}</b>
        {answer.namespace ? <> on <Code>{answer.namespace}</Code></> : null}:{" "}
        {none ? "no GC run yet." : `${plural(answer.runs.length, "run")}, newest first.`}
      </Text>
      {answer.error ? <Text color="red.500">{answer.error}</Text> : null}
      {answer.inventory ? <RepoInventory record={answer.inventory} repository={answer.repository} /> : null}
      {none ? null : <Charts runs={answer.runs} steps={answer.steps ?? []} />}
      <TriggerForm dagId={dagId} grace={grace} onTriggered={() => window.setTimeout(() => setReload((x) => x + 1), 1500)} />
      <Explain dagId={dagId} />
      {answer.space ? <SpaceView space={answer.space} dagId={dagId} /> : null}
      {none ? null : <Latest run={latest} newest={answer.runs[0]} dagId={dagId} />}
      <Box overflowX="auto"><RunsTable runs={answer.runs} dagId={dagId} /></Box>
      <Text fontSize="xs" color="gray.500" data-testid="gc-version">
        lakefs-gc {answer.version ?? "?"}: wall s is the DAG run&apos;s, start to end; work s the GC steps&apos; own.
      </Text>
    </Box>
  );
};
