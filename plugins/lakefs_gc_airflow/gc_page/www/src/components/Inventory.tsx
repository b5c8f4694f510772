// Storage inventories on the page: which inventory a run listed from, or why it listed by LIST instead (the
// runs table's listing cell); and what the discovery refresh found at each inventory location the entries read
// (the fleet's list on the page, one repository's line above its runs). A run checks its inventory again itself.
import { Box, Code, Text } from "@chakra-ui/react";
import { n, plural, when } from "../api";
import type { FleetInventory, Run } from "../types";

/** How long, as the report says it: "1.7 days", "5.0 hours", "1.0 minute". */
export const ageWords = (seconds: number) => {
  for (const [unit, size] of [["day", 86400], ["hour", 3600], ["minute", 60]] as const) {
    if (seconds >= size || unit === "minute") {
      const shown = (seconds / size).toFixed(1);
      return `${shown} ${unit}${shown === "1.0" ? "" : "s"}`;
    }
  }
  return "";
};

/** The listing cell of a run: empty for a run that listed by LIST as always. */
export const ListingCell = ({ run }: { run: Run }) => {
  const l = run.listing;
  if (!l) return null;
  if (l.source === "inventory") {
    const parts = [
      `taken ${when(l.inventory_time)}`,
      `${plural(l.inventory_rows ?? 0, "row")} read in ${plural(l.inventory_files ?? 0, "file")}`,
      `${plural(l.slices_topped_up ?? 0, "slice")} topped up by LIST`,
    ];
    if (l.inventory_deferred !== null) parts.push(`${n(l.inventory_deferred)} not older than the cutoff, left for a later run`);
    return (
      <Box title={l.inventory_id ?? undefined} data-testid="gc-listing-inventory">
        <Text>inventory, {ageWords(l.inventory_age_seconds ?? 0)} old</Text>
        <Text fontSize="xs">{parts.join("; ")}</Text>
      </Box>
    );
  }
  return (
    <Box data-testid="gc-listing-fallback">
      <Text>LIST</Text>
      <Text fontSize="xs" color="orange.600">the inventory was not used: {l.fallback}</Text>
    </Box>
  );
};

const where = (r: FleetInventory) => `${r.location}${r.name ? ` (${r.name})` : ""}`;

/** One inventory location as the refresh found it, in one sentence (as its log line says it). */
export const fleetLine = (r: FleetInventory) => {
  const readers = plural(Object.keys(r.repositories).length, "repository", "repositories");
  if (!r.inventory_id) return `${where(r)}: none usable for its ${readers}: ${r.reason ?? ""}`;
  const newest = `${where(r)}: newest ${r.inventory_id} (taken ${when(r.inventory_time)})`;
  return r.verified ? `${newest}, verified for its ${readers}` : `${newest}; not for all its ${readers}: ${r.reason ?? ""}`;
};

/** The inventories the fleet's entries read, as the last refresh found them (nothing when it recorded none). */
export const FleetInventories = ({ inventories }: { inventories: FleetInventory[] }) => (inventories.length === 0 ? null : (
  <Box mb={3} data-testid="gc-fleet-inventories">
    <Text fontWeight="bold">Inventories (checked by the discovery refresh; each run checks its own again)</Text>
    {inventories.map((r) => (
      <Text key={`${r.location}/${r.name}/${r.storage_conn_id ?? ""}`} fontSize="sm" color={r.verified ? undefined : "orange.600"}
        data-testid="gc-fleet-inventory" data-verified={String(r.verified)}>
        {fleetLine(r)} ({when(r.checked_at)})
      </Text>
    ))}
  </Box>
));

/** What the refresh found for one repository at the location it reads. */
export const RepoInventory = ({ record, repository }: { record: FleetInventory; repository: string }) => {
  const mine = record.repositories[repository];
  const found = mine?.inventory_id
    ? <>{mine.inventory_id}, taken {when(mine.inventory_time)}, usable for this repository</>
    : <>none usable for this repository: {mine?.reason ?? record.reason}</>;
  return (
    <Text fontSize="sm" color={mine?.inventory_id ? undefined : "orange.600"} data-testid="gc-inventory">
      Lists from the inventory at <Code>{where(record)}</Code>: the discovery refresh at {when(record.checked_at)} found{" "}
      {found}. Each run checks it again at its start.
    </Text>
  );
};
