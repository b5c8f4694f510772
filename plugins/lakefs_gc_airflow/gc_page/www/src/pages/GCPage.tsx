// The page: the repositories you may read (one button each) and the chosen one; in a DAG's tab
// (dagId given) that DAG's repository alone.
import { Box, Button, HStack, Heading, Spinner, Text } from "@chakra-ui/react";
import { useEffect, useState } from "react";
import { api } from "../api";
import { FleetInventories } from "../components/Inventory";
import { OrphanedNamespaces } from "../components/Orphans";
import type { FleetInventory, OrphanedNamespace, Props, Removed, Repo, ReposAnswer } from "../types";
import { Repository } from "./Repository";

const GCPage = ({ dagId }: Props) => {
  const [repos, setRepos] = useState<Repo[] | null>(null);
  const [errors, setErrors] = useState<string[]>([]);
  const [removed, setRemoved] = useState<Removed[]>([]);
  const [inventories, setInventories] = useState<FleetInventory[]>([]);
  const [orphans, setOrphans] = useState<OrphanedNamespace[]>([]);
  const [chosen, setChosen] = useState<string | undefined>(dagId);
  useEffect(() => {
    if (dagId) return;
    api<ReposAnswer>("/repositories")
      .then((a) => {
        setRepos(a.repositories);
        setErrors(a.errors ?? []);
        setRemoved(a.removed ?? []);
        setInventories(a.inventories ?? []);
        setOrphans(a.orphans ?? []);
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
      <FleetInventories inventories={inventories} />
      <OrphanedNamespaces orphans={orphans} />
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
