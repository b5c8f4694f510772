// The charts: a run's figures over the runs (Charts), each chart a canvas in a box (ChartBox); with
// one run so far, its figures as numbers in the same three boxes (OneRun): a chart of one point is
// dots on an axis.
import { Box, SimpleGrid, Table, Text } from "@chakra-ui/react";
import { Chart, registerables } from "chart.js";
import { useEffect, useRef } from "react";
import { bytes, n, when } from "../api";
import type { Run } from "../types";

Chart.register(...registerables);

export const COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#9d755d"];

export const ChartBox = ({ title, build }: { title: string; build: (c: HTMLCanvasElement) => Chart }) => {
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
export const Charts = ({ runs, steps }: { runs: Run[]; steps: string[] }) => {
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
  if (shown.length === 1) return <OneRun run={shown[0]} steps={steps} />;
  return (
    <SimpleGrid columns={{ base: 1, xl: 3 }} gap={4} data-testid="gc-charts">
      <ChartBox key={`o${shown.length}`} title="Objects per run" build={objects} />
      <ChartBox key={`l${shown.length}`} title="Listed and reclaimed" build={listed} />
      <ChartBox key={`d${shown.length}`} title="Seconds per step" build={durations} />
    </SimpleGrid>
  );
};

/** One box of figures: label and value, one row each. */
const Figures = ({ title, rows }: { title: string; rows: [string, string, string][] }) => (
  <Box borderWidth="1px" borderRadius="md" p={3}>
    <Text fontWeight="bold" mb={2}>{title}</Text>
    <Table.Root size="sm">
      <Table.Body>
        {rows.map(([key, label, value]) => (
          <Table.Row key={key} data-figure={key}>
            <Table.Cell>{label}</Table.Cell>
            <Table.Cell textAlign="end" fontVariantNumeric="tabular-nums">{value}</Table.Cell>
          </Table.Row>
        ))}
      </Table.Body>
    </Table.Root>
  </Box>
);

/** The one run so far: the charts' figures as numbers, the charts themselves from the second run on. */
export const OneRun = ({ run, steps }: { run: Run; steps: string[] }) => (
  <Box data-testid="gc-charts" data-runs="1">
    <Text mb={2} data-testid="gc-charts-one-run">
      One run so far ({when(run.start_time)}): its figures below; the charts over the runs start with the second run.
    </Text>
    <SimpleGrid columns={{ base: 1, xl: 3 }} gap={4}>
      <Figures title="Objects in this run" rows={[["candidates", "candidates", n(run.candidates ?? 0)],
        ["deleted", "deleted", n(run.deleted ?? 0)], ["already_gone", "already gone", n(run.already_gone ?? 0)],
        ["held_back", "held back", n(run.held_back ?? 0)], ["dead_letters", "dead letters", n(run.delete_failed ?? 0)]]} />
      <Figures title="Listed and reclaimed" rows={[["listed", "listed objects", n(run.listed_objects ?? 0)],
        ["reclaimed", "reclaimed", bytes(run.reclaimed_bytes ?? 0)],
        ...(run.freed_now_bytes === null || run.freed_now_bytes === undefined ? [] : [
          ["freed_now", "freed now", bytes(run.freed_now_bytes)],
          ["freed_later", "freed later", bytes((run.freed_later ?? []).reduce((a, x) => a + x.bytes, 0))],
          ["still_billed", "still billed", bytes(run.still_billed_bytes ?? 0)]] as [string, string, string][])]} />
      <Figures title="Seconds per step" rows={steps.map((s) => [s, s, (run.seconds?.[s] ?? 0).toFixed(1)])} />
    </SimpleGrid>
  </Box>
);
