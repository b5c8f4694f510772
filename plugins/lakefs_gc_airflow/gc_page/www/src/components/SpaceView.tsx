import { Box, Heading, SimpleGrid, Table, Text } from "@chakra-ui/react";
import { Chart } from "chart.js";
import { bytes, n, when } from "../api";
import type { SpaceDoc } from "../types";
import { ChartBox, COLORS } from "./Charts";
import { WhatIf } from "./WhatIf";

// Where the bytes go: the newest run's attribution (space.json), by class and by branch; the stale branches
const CLASS_LABELS: [string, string][] = [["head", "read by a branch HEAD"], ["retention", "only in retention windows"],
  ["staged", "only staged"], ["deleted", "unreferenced: deleted this run"], ["held_back", "unreferenced: held back"],
  ["young", "unreferenced: too young"]];

const unitOf = (most: number) => Math.min(4, Math.max(0, Math.floor(Math.log(Math.max(most, 1)) / Math.log(1024))));

export const SpaceView = ({ space, dagId }: { space: SpaceDoc; dagId: string }) => {
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
