// The charts over the runs: with two runs or more, three charts; with one, its figures as numbers
// (a chart of one point is dots on its axis) and a note that the charts start with the second run.
import { screen } from "@testing-library/react";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { Charts } from "../src/components/Charts";
import type { Run } from "../src/types";
import { renderPage } from "./render";

const charts = vi.hoisted(() => [] as HTMLCanvasElement[]);
vi.mock("chart.js", () => {
  class Chart {
    static register() {}
    constructor(canvas: HTMLCanvasElement) {
      charts.push(canvas);
    }
    destroy() {}
  }
  return { Chart, registerables: [] };
});

const STEPS = ["mark_uncommitted", "delete"];
const run = (id: string, start: string, deleted: number): Run => ({
  mark_id: id, sweep: null, airflow_run_id: `manual__${id}`, start_time: start, report: `s3://b/r/${id}/summary.json`, problem: null,
  success: true, rows: [], seconds: { mark_uncommitted: 1.25, delete: 0.5 }, listed_objects: 12345, candidates: 7, deleted,
  already_gone: 1, held_back: 2, delete_failed: 0, reclaimed_bytes: 3 * 1024 * 1024, dag_run: null });

describe("Charts", () => {
  beforeEach(() => {
    charts.length = 0;
  });

  it("shows one run's figures as numbers, not as a chart", () => {
    renderPage(<Charts runs={[run("m1", "2026-01-02T03:04:05+00:00", 4)]} steps={STEPS} />);
    const box = screen.getByTestId("gc-charts");
    expect(box.getAttribute("data-runs")).toBe("1");
    expect(box.querySelector("canvas")).toBeNull();
    expect(charts).toHaveLength(0);
    expect(screen.getByTestId("gc-charts-one-run").textContent)
      .toBe("One run so far (2026-01-02 03:04:05Z): its figures below; the charts over the runs start with the second run.");
    const figure = (k: string) => Array.from(box.querySelectorAll(`[data-figure="${k}"] td`)).map((td) => td.textContent);
    expect(figure("deleted")).toEqual(["deleted", "4"]);
    expect(figure("held_back")).toEqual(["held back", "2"]);
    expect(figure("listed")).toEqual(["listed objects", "12,345"]);
    expect(figure("reclaimed")).toEqual(["reclaimed", "3.0 MiB"]);
    expect(figure("mark_uncommitted")).toEqual(["mark_uncommitted", "1.3"]);
    expect(figure("delete")).toEqual(["delete", "0.5"]);
  });

  it("draws three charts from the second run on", () => {
    renderPage(<Charts runs={[run("m2", "2026-01-03T00:00:00+00:00", 5), run("m1", "2026-01-02T00:00:00+00:00", 4)]} steps={STEPS} />);
    expect(screen.getByTestId("gc-charts").querySelectorAll("canvas")).toHaveLength(3);
    expect(charts).toHaveLength(3);
    expect(screen.queryByTestId("gc-charts-one-run")).toBeNull();
  });
});

describe("one run's bill", () => {
  it("shows freed now, freed later and still billed beside reclaimed when the run has them", () => {
    const r: Run = { ...run("m1", "2026-01-02T03:04:05+00:00", 4), freeing: { when: "later", on: "2026-12-08T00:00:00.000000Z",
      how: "gcs soft delete", detail: "7 days" }, freed_now_bytes: 1024, freed_later: [{ on: "2026-12-08T00:00:00.000000Z", bytes: 2048 }],
      still_billed_bytes: 0 };
    renderPage(<Charts runs={[r]} steps={STEPS} />);
    const box = screen.getByTestId("gc-charts");
    const figure = (k: string) => Array.from(box.querySelectorAll(`[data-figure="${k}"] td`)).map((td) => td.textContent);
    expect(figure("reclaimed")).toEqual(["reclaimed", "3.0 MiB"]);
    expect(figure("freed_now")).toEqual(["freed now", "1.0 KiB"]);
    expect(figure("freed_later")).toEqual(["freed later", "2.0 KiB"]);
    expect(figure("still_billed")).toEqual(["still billed", "0 B"]);
  });
});
