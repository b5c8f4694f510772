// Where the bytes go: from a small space.json, the two charts' canvases (chart.js mocked: each chart's
// canvas and data recorded) and the stale branches' rows.
import { screen } from "@testing-library/react";
import { beforeEach, describe, expect, it, vi } from "vitest";
import { SpaceView } from "../src/components/SpaceView";
import type { SpaceDoc } from "../src/types";
import { renderPage } from "./render";

type Made = { canvas: HTMLCanvasElement; config: { type: string; data: { labels: string[]; datasets: { label: string; data: number[] }[] } };
  destroyed: boolean };
const charts = vi.hoisted(() => [] as Made[]);
vi.mock("chart.js", () => {
  class Chart {
    static register() {}
    made: Made;
    constructor(canvas: HTMLCanvasElement, config: Made["config"]) {
      this.made = { canvas, config, destroyed: false };
      charts.push(this.made);
    }
    destroy() {
      this.made.destroyed = true;
    }
  }
  return { Chart, registerables: [] };
});

const MiB = 1024 * 1024;
const amount = (objects: number, mib: number) => ({ objects, bytes: mib * MiB });
const SPACE: SpaceDoc = {
  mark_id: "m-1", airflow_run_id: "manual__1", problem: null, computed_at: "2025-01-02T03:04:05.123+00:00",
  rules: { default_days: 21, branches: { main: 28 } }, stale_branch_days: 90,
  stale: [{ branch: "old-feature", head_age_days: 120.4, alone: amount(3, 2) }, { branch: "spike", head_age_days: 95, alone: amount(1200, 0.5) }],
  attribution: {
    total: amount(40, 10),
    classes: { head: amount(20, 6), retention: amount(10, 2), staged: amount(2, 0.5), deleted: amount(8, 1.5) },
    branches: {
      main: { alone: { head: amount(10, 4) }, shared: { head: amount(5, 1) } },
      "old-feature": { alone: { retention: amount(3, 2) }, shared: {} },
    },
    tags: { "v1.0": amount(4, 1) },
    sharing: "counted once",
  },
};

describe("SpaceView", () => {
  beforeEach(() => {
    charts.length = 0;
  });

  it("draws its two charts on their canvases, in the unit of the total", () => {
    renderPage(<SpaceView space={SPACE} dagId="lakefs_gc__r" />);
    const canvases = Array.from(screen.getByTestId("gc-space").querySelectorAll("canvas"));
    expect(canvases.map((c) => c.getAttribute("aria-label"))).toEqual(["Space by class", "Space by branch (alone and shared)"]);
    expect(charts.map((c) => c.canvas)).toEqual(canvases);
    const [byClass, byBranch] = charts.map((c) => c.config);
    expect(byClass.data.labels[0]).toBe("read by a branch HEAD");
    expect(byClass.data.datasets[0].label).toBe("MiB");
    expect(byClass.data.datasets[0].data).toEqual([6, 2, 0.5, 1.5, 0, 0]);
    expect(byBranch.data.labels).toEqual(["main", "old-feature"]);
    const series = Object.fromEntries(byBranch.data.datasets.map((d) => [d.label, d.data]));
    expect(series["HEAD, alone"]).toEqual([4, 0]);
    expect(series["HEAD, shared"]).toEqual([1, 0]);
    expect(series["retention, alone"]).toEqual([0, 2]);
    expect(screen.getByTestId("gc-space-tags").textContent).toContain("v1.0 4 objects, 1.0 MiB");
  });

  it("lists the stale branches by what they alone hold", () => {
    renderPage(<SpaceView space={SPACE} dagId="lakefs_gc__r" />);
    const rows = Array.from(screen.getByTestId("gc-stale").querySelectorAll("tbody tr"));
    expect(rows.map((r) => r.getAttribute("data-branch"))).toEqual(["old-feature", "spike"]);
    expect(rows.map((r) => Array.from(r.querySelectorAll("td")).map((td) => td.textContent)))
      .toEqual([["old-feature", "120", "3", "2.0 MiB"], ["spike", "95", "1,200", "512.0 KiB"]]);
    expect(rows[0].querySelector('[data-col="bytes"]')?.getAttribute("title")).toBe("2,097,152 bytes");
  });

  it("says None. without stale branches, and the problem without an attribution", () => {
    const { unmount } = renderPage(<SpaceView space={{ ...SPACE, stale: [] }} dagId="lakefs_gc__r" />);
    expect(screen.getByTestId("gc-stale").textContent).toBe("None.");
    unmount();
    expect(charts.every((c) => c.destroyed)).toBe(true);
    renderPage(<SpaceView space={{ ...SPACE, problem: "space.json unreadable", attribution: undefined }} dagId="lakefs_gc__r" />);
    expect(screen.getByTestId("gc-space").textContent).toBe("Where the bytes go: space.json unreadable");
  });
});
