// Orphaned namespaces on the page: what deleted repositories left in the store, as the discovery refresh found
// it (its size by a bounded listing), and the command that removes one after the grace period.
import { Box, Code, Text } from "@chakra-ui/react";
import { bytes, plural, when } from "../api";
import type { OrphanedNamespace } from "../types";

/** Its size in words: "3 objects, 1.2 KiB", "at least ..." for a listing stopped at its bound, or why not known. */
export const orphanSize = (o: OrphanedNamespace) => {
  if (o.objects === null || o.bytes === null) return `size not known (${o.size_problem ?? "not measured yet"})`;
  const size = `${plural(o.objects, "object")}, ${bytes(o.bytes)}`;
  return o.complete ? size : `at least ${size}`;
};

/** The orphaned namespaces the last refresh recorded (nothing when there are none). */
export const OrphanedNamespaces = ({ orphans }: { orphans: OrphanedNamespace[] }) => (orphans.length === 0 ? null : (
  <Box mb={3} data-testid="gc-orphans">
    <Text fontWeight="bold">
      Orphaned namespaces (their repository is gone from lakeFS; no GC run deletes them): remove one with{" "}
      <Code>lakefs-gc reclaim-namespace NAMESPACE --confirm NAMESPACE</Code> after the grace period
    </Text>
    {orphans.map((o) => (
      <Text key={o.namespace} fontSize="sm" color="orange.600" data-testid="gc-orphan" data-namespace={o.namespace}>
        {o.namespace}: {orphanSize(o)}; repository {o.repository} ({o.lakefs_conn_id}) gone since {when(o.orphaned_at)}
      </Text>
    ))}
  </Box>
));
