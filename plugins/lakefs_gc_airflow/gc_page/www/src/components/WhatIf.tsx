import { Box, Button, HStack, Input, Text } from "@chakra-ui/react";
import { useState } from "react";
import { api } from "../api";
import type { WhatIfAnswer } from "../types";

// lakefs-gc whatif: what the next run would free if a branch were deleted or a rule changed (nothing
// changes). The branch starts empty (the branches found are offered as suggestions): a branch chosen
// for you would be the first in order, often the default branch, whose deletion lakeFS refuses.
export const WhatIf = ({ dagId, branches }: { dagId: string; branches: string[] }) => {
  const [kind, setKind] = useState<"delete" | "rule">("delete");
  const [branch, setBranch] = useState("");
  const [days, setDays] = useState("");
  const [answer, setAnswer] = useState<WhatIfAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const ask = () => {
    if (kind === "delete" && !branch.trim()) {
      setAnswer(null);
      setError("name the branch to price its deletion");
      return;
    }
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
          list={`gc-whatif-branches-${dagId}`}
          onChange={(e: React.ChangeEvent<HTMLInputElement>) => setBranch(e.target.value)} data-testid="gc-whatif-branch" />
        <datalist id={`gc-whatif-branches-${dagId}`}>{branches.map((b) => <option key={b} value={b} />)}</datalist>
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
