/// <reference types="vite/client" />
// The committed bundle (dist/main.umd.js, Ajv inside it), loaded as Airflow's UI loads it: React,
// Chakra UI and Emotion from the host's globals, the page read from globalThis.AirflowPlugin; in a
// DAG's tab, its trigger form turns an out-of-range share red and sends nothing.
import * as ChakraUI from "@chakra-ui/react";
import * as EmotionReact from "@emotion/react";
import { fireEvent, screen } from "@testing-library/react";
import * as React from "react";
import * as ReactDOM from "react-dom";
import * as ReactJSXRuntime from "react/jsx-runtime";
import { describe, expect, it } from "vitest";
import bundle from "../dist/main.umd.js?raw";
import { renderPage, stubFetch } from "./render";

const DAG = "lakefs_gc__sample-repo";
const PARAMS = {
  max_delete_share: { value: 1, schema: { type: "number", title: "Blast-radius guard: max share", allOf: [{ minimum: 0, maximum: 1 }] },
    description: null },
};

describe("the committed bundle", () => {
  it("is the page Airflow mounts, its form checked by the Ajv inside it", async () => {
    Object.assign(globalThis, { React, ReactDOM, ReactJSXRuntime, ChakraUI, EmotionReact });
    new Function(bundle)(); // the UMD wrapper: no module here, so it sets globalThis.AirflowPlugin
    const GCPage = (globalThis as unknown as { AirflowPlugin: React.ComponentType<{ dagId?: string }> }).AirflowPlugin;
    const calls = stubFetch((url) => (url.endsWith("/details") ? { body: { params: PARAMS, is_paused: false } }
      : { body: { repository: "sample-repo", dag_id: DAG, namespace: "s3://bucket/repo", error: null, runs: [], steps: [], space: null } }));
    renderPage(<GCPage dagId={DAG} />);
    fireEvent.click(await screen.findByTestId("gc-trigger-open"));
    const field = await screen.findByTestId("gc-param-max_delete_share");
    fireEvent.change(field.querySelector("input") as HTMLInputElement, { target: { value: "5" } });
    expect(screen.getByTestId("gc-param-error-max_delete_share").textContent).toBe("must be at most 1, got 5");
    expect(field.getAttribute("data-invalid")).toBe("true");
    expect((screen.getByTestId("gc-trigger-run") as HTMLButtonElement).disabled).toBe(true);
    fireEvent.click(screen.getByTestId("gc-trigger-run"));
    expect(calls.map((c) => `${c.method} ${c.url}`)).toEqual([`GET /lakefs-gc/api/dags/${DAG}/runs`, `GET /api/v2/dags/${DAG}/details`]);
  });
});
