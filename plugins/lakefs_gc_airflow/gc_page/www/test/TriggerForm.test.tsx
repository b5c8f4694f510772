// Run GC: a bad value turns its field red with the reason (Ajv's error in the form's words) and
// nothing is sent; good values are sent as the Params' types; what the server refuses lands on its field;
// a minimum age below lakeFS's grace period is a warning naming both values and the fix, which does not
// block; a run created is a notice with a link to it.
import { fireEvent, screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import type { Grace } from "../src/components/paramCheck";
import { TriggerForm } from "../src/components/TriggerForm";
import { renderPage, stubFetch } from "./render";

const DAG = "lakefs_gc__sample-repo";
const bound = (minimum: number, maximum?: number) => ({ allOf: [maximum === undefined ? { minimum } : { minimum, maximum }] });
// the GC DAG's Params as api/v2/dags/<dag_id>/details gives them (plugins/lakefs_gc_airflow/params.py)
const PARAMS = {
  mode: { value: "mark_and_sweep", schema: { type: "string", enum: ["mark_and_sweep", "mark_only", "sweep_only"], title: "Run mode" },
    description: null },
  mark_id: { value: null, schema: { type: ["null", "string"], title: "Mark id (sweep_only)" }, description: null },
  dry_run: { value: false, schema: { type: "boolean", title: "Dry run" }, description: null },
  unsafe_min_age_override: { value: false, schema: { type: "boolean", title: "Unsafe minimum-age override" }, description: null },
  min_age_seconds: { value: 21600, schema: { type: "integer", title: "Minimum object age (s)", ...bound(0) }, description: null },
  max_delete_share: { value: 1, schema: { type: "number", title: "Blast-radius guard: max share", ...bound(0, 1) },
    description: "Allowed: from 0 to 1; anything else is refused." },
};

const open = async (route?: (url: string, method: string) => { status?: number; body: unknown }, grace?: Grace | null) => {
  const calls = stubFetch((url, method) =>
    url.endsWith("/details") ? { body: { params: PARAMS, is_paused: false } } : route ? route(url, method) : { body: {} });
  renderPage(<TriggerForm dagId={DAG} onTriggered={() => undefined} grace={grace} />);
  fireEvent.click(screen.getByTestId("gc-trigger-open"));
  await screen.findByTestId("gc-param-max_delete_share");
  return calls;
};
const input = (k: string) => screen.getByTestId(`gc-param-${k}`).querySelector("input") as HTMLInputElement;
const type = (k: string, text: string) => fireEvent.change(input(k), { target: { value: text } });
const error = (k: string) => screen.queryByTestId(`gc-param-error-${k}`)?.textContent ?? null;
const warning = (k: string) => screen.queryByTestId(`gc-param-warning-${k}`)?.textContent ?? null;
const check = (k: string) => fireEvent.click(screen.getByTestId(`gc-param-${k}`).querySelector("input") as HTMLInputElement);
const runButton = () => screen.getByTestId("gc-trigger-run") as HTMLButtonElement;

describe("TriggerForm", () => {
  it("opens with the DAG's defaults and no red field", async () => {
    const calls = await open();
    expect(calls.map((c) => c.url)).toEqual([`/api/v2/dags/${DAG}/details`]);
    expect(input("max_delete_share").value).toBe("1");
    expect(input("mark_id").value).toBe("");
    expect(document.querySelectorAll("[data-invalid]")).toHaveLength(0);
    expect(runButton().disabled).toBe(false);
  });

  it("turns an out-of-range share red with why and sends nothing", async () => {
    const calls = await open();
    type("max_delete_share", "5");
    expect(error("max_delete_share")).toBe("must be at most 1, got 5");
    expect(screen.getByTestId("gc-param-max_delete_share").getAttribute("data-invalid")).toBe("true");
    expect(input("max_delete_share").getAttribute("aria-invalid")).toBe("true");
    expect(runButton().disabled).toBe(true);
    expect(screen.getByText("Fix max_delete_share first.")).toBeTruthy();
    fireEvent.click(runButton());
    type("min_age_seconds", "-1");
    expect(error("min_age_seconds")).toBe("must be at least 0, got -1");
    expect(calls.filter((c) => c.method === "POST")).toEqual([]);
  });

  it("turns a wrongly typed value red with why and sends nothing", async () => {
    const calls = await open();
    type("min_age_seconds", "ten");
    expect(error("min_age_seconds")).toBe('must be a number, got "ten"');
    type("min_age_seconds", "1.5");
    expect(error("min_age_seconds")).toBe("must be a whole number, got 1.5");
    type("min_age_seconds", "");
    expect(error("min_age_seconds")).toBe("required: give a value");
    expect(screen.getByTestId("gc-param-min_age_seconds").getAttribute("data-invalid")).toBe("true");
    expect(runButton().disabled).toBe(true);
    fireEvent.click(runButton());
    expect(calls.filter((c) => c.method === "POST")).toEqual([]);
    type("min_age_seconds", "60");
    expect(error("min_age_seconds")).toBeNull();
    expect(runButton().disabled).toBe(false);
  });

  it("sends the typed values as the Params' types once every field is good", async () => {
    const calls = await open((url, method) => (method === "POST" ? { body: { dag_run_id: "manual__1" } } : { body: {} }));
    type("max_delete_share", "0.5");
    type("min_age_seconds", " 20 ");
    fireEvent.click(screen.getByTestId("gc-param-dry_run").querySelector("input") as HTMLInputElement);
    fireEvent.click(runButton());
    expect(await screen.findByTestId("gc-trigger-message")).toHaveProperty("textContent", "Run manual__1 queued");
    const post = calls.find((c) => c.method === "POST");
    expect(post?.url).toBe(`/api/v2/dags/${DAG}/dagRuns`);
    expect(post?.body).toEqual({ logical_date: null, conf: { mode: "mark_and_sweep", mark_id: null, dry_run: true,
      unsafe_min_age_override: false, min_age_seconds: 20, max_delete_share: 0.5 } });
  });

  it("shows a run created as a notice with a link to the DAG run", async () => {
    await open((url, method) => (method === "POST" ? { body: { dag_run_id: "manual__2026-01-02T03:04:05+00:00", state: "queued" } }
      : { body: {} }));
    fireEvent.click(runButton());
    const notice = await screen.findByTestId("gc-trigger-notice");
    expect(notice.textContent).toBe("Run manual__2026-01-02T03:04:05+00:00 queued: open the DAG run in Airflow. "
      + "The runs below list it; reload the page to see how it ends.");
    expect(screen.getByTestId("gc-trigger-run-link").getAttribute("href"))
      .toBe(`/dags/${DAG}/runs/${encodeURIComponent("manual__2026-01-02T03:04:05+00:00")}`);
    fireEvent.click(screen.getByTestId("gc-trigger-open")); // the form closed: the notice stays
    expect(screen.getByTestId("gc-trigger-notice")).toBeTruthy();
  });

  it("warns, across two fields, of a minimum age below lakeFS's grace period, naming both and the fix", async () => {
    const calls = await open((url, method) => (method === "POST" ? { body: { dag_run_id: "manual__1" } } : { body: {} }),
      { seconds: 86400, source: "lakeFS" });
    const refused = (age: string) => `min_age_seconds ${age} is below lakeFS's grace period of 86,400 s: prepare_run will `
      + "refuse the run. Raise min_age_seconds to at least 86400, or set unsafe_min_age_override.";
    expect(warning("min_age_seconds")).toBe(refused("21,600")); // the DAG's default is below it too: warned as the form opens
    type("min_age_seconds", "60");
    expect(warning("min_age_seconds")).toBe(refused("60"));
    expect(screen.getByTestId("gc-param-min_age_seconds").getAttribute("data-warning")).toBe("true");
    expect(error("min_age_seconds")).toBeNull();
    expect(runButton().disabled).toBe(false); // a warning, not a block: the server's refusal is the rule
    check("unsafe_min_age_override");
    expect(warning("min_age_seconds")).toBe("min_age_seconds 60 is below lakeFS's grace period of 86,400 s and "
      + "unsafe_min_age_override is set: this run may delete objects uploaded but not yet linked.");
    check("unsafe_min_age_override");
    type("min_age_seconds", "86400");
    expect(warning("min_age_seconds")).toBeNull();
    expect(screen.getByTestId("gc-param-min_age_seconds").getAttribute("data-warning")).toBeNull();
    type("min_age_seconds", "-1"); // a bad value is its error alone
    expect([error("min_age_seconds"), warning("min_age_seconds")]).toEqual(["must be at least 0, got -1", null]);
    type("min_age_seconds", "60");
    fireEvent.click(runButton());
    await screen.findByTestId("gc-trigger-notice");
    expect(calls.filter((c) => c.method === "POST").map((c) => (c.body as { conf: Record<string, unknown> }).conf.min_age_seconds))
      .toEqual([60]);
  });

  it("names the report a grace period comes from, and warns of nothing when it is unknown", async () => {
    await open(undefined, { seconds: 3600, source: "the report of run manual__7" });
    type("min_age_seconds", "60");
    expect(warning("min_age_seconds")).toBe("min_age_seconds 60 is below lakeFS's grace period of 3,600 s (as the report of "
      + "run manual__7 recorded it): prepare_run will refuse the run. Raise min_age_seconds to at least 3600, or set "
      + "unsafe_min_age_override.");
  });

  it("warns of nothing when the grace period is unknown", async () => {
    await open(undefined, null);
    type("min_age_seconds", "60");
    expect(warning("min_age_seconds")).toBeNull();
    expect(document.querySelectorAll("[data-warning]")).toHaveLength(0);
  });

  it("puts what the server refuses on its field", async () => {
    await open(() => ({ status: 400, body: { detail: "Invalid input for param mark_id: 'x' is too short\n\nFailed validating" } }));
    type("mark_id", "x");
    fireEvent.click(runButton());
    await waitFor(() => expect(error("mark_id")).toBe("'x' is too short"));
    expect(screen.getByTestId("gc-trigger-message").textContent).toBe("refused: mark_id: 'x' is too short");
    type("mark_id", "xy");
    expect(error("mark_id")).toBeNull();
  });
});
