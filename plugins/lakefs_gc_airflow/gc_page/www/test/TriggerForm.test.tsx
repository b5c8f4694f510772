// Run GC: a bad value turns its field red with the reason (Ajv's error in the form's words) and
// nothing is sent; good values are sent as the Params' types; what the server refuses lands on its field.
import { fireEvent, screen, waitFor } from "@testing-library/react";
import { describe, expect, it } from "vitest";
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
  min_age_seconds: { value: 21600, schema: { type: "integer", title: "Minimum object age (s)", ...bound(0) }, description: null },
  max_delete_share: { value: 1, schema: { type: "number", title: "Blast-radius guard: max share", ...bound(0, 1) },
    description: "Allowed: from 0 to 1; anything else is refused." },
};

const open = async (route?: (url: string, method: string) => { status?: number; body: unknown }) => {
  const calls = stubFetch((url, method) =>
    url.endsWith("/details") ? { body: { params: PARAMS, is_paused: false } } : route ? route(url, method) : { body: {} });
  renderPage(<TriggerForm dagId={DAG} onTriggered={() => undefined} />);
  fireEvent.click(screen.getByTestId("gc-trigger-open"));
  await screen.findByTestId("gc-param-max_delete_share");
  return calls;
};
const input = (k: string) => screen.getByTestId(`gc-param-${k}`).querySelector("input") as HTMLInputElement;
const type = (k: string, text: string) => fireEvent.change(input(k), { target: { value: text } });
const error = (k: string) => screen.queryByTestId(`gc-param-error-${k}`)?.textContent ?? null;
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
    expect(await screen.findByTestId("gc-trigger-message")).toHaveProperty("textContent", "run manual__1 created");
    const post = calls.find((c) => c.method === "POST");
    expect(post?.url).toBe(`/api/v2/dags/${DAG}/dagRuns`);
    expect(post?.body).toEqual({ logical_date: null,
      conf: { mode: "mark_and_sweep", mark_id: null, dry_run: true, min_age_seconds: 20, max_delete_share: 0.5 } });
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
