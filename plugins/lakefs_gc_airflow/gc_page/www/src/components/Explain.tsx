import { Box, Button, HStack, Heading, Input, Text } from "@chakra-ui/react";
import { useState } from "react";
import { api } from "../api";
import type { ExplainAnswer } from "../types";

// lakefs-gc explain for one address (or a logical path on a ref): what the GC decided and why
export const Explain = ({ dagId }: { dagId: string }) => {
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
