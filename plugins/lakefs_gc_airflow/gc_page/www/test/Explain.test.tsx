// Explain an address: the address typed is sent to our API, the answer's note and lines are shown;
// a refusal shows the server's message alone (no "400 Bad Request:" before it).
import { fireEvent, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { Explain } from "../src/components/Explain";
import { renderPage, stubFetch } from "./render";

const DAG = "lakefs_gc__sample-repo";
const ADDRESS = "data/gc1/obj-7";

const ask = (target: string, ref = "") => {
  fireEvent.change(screen.getByTestId("gc-explain-target"), { target: { value: target } });
  if (ref) fireEvent.change(screen.getByPlaceholderText(/ref for a path/), { target: { value: ref } });
  fireEvent.click(screen.getByTestId("gc-explain-go"));
};

describe("Explain", () => {
  it("sends the address and shows the answer's lines", async () => {
    const calls = stubFetch(() => ({ body: { target: ADDRESS, address: ADDRESS, note: null, verdict: "deleted", reason: "unreferenced",
      fates: ["deleted"], lines: [`${ADDRESS}: deleted by run manual__1`, "  no commit in retention reads it"] } }));
    renderPage(<Explain dagId={DAG} />);
    ask(` ${ADDRESS} `);
    const answer = await screen.findByTestId("gc-explain-answer");
    expect(answer.textContent).toBe(`${ADDRESS}: deleted by run manual__1\n  no commit in retention reads it`);
    expect(calls).toHaveLength(1);
    const url = new URL(calls[0].url, "http://x");
    expect(url.pathname).toBe(`/lakefs-gc/api/dags/${DAG}/explain`);
    expect(Object.fromEntries(url.searchParams)).toEqual({ target: ADDRESS });
    expect(screen.queryByTestId("gc-explain-error")).toBeNull();
  });

  it("sends a path with its ref and shows the answer's note first", async () => {
    const calls = stubFetch(() => ({ body: { target: "tables/a.parquet", address: ADDRESS, note: "tables/a.parquet on dev is data/gc1/obj-7",
      verdict: "kept", reason: "head", fates: [], lines: [`${ADDRESS}: kept (read by dev's HEAD)`] } }));
    renderPage(<Explain dagId={DAG} />);
    ask("tables/a.parquet", "dev");
    expect((await screen.findByTestId("gc-explain-answer")).textContent)
      .toBe(`tables/a.parquet on dev is data/gc1/obj-7\n${ADDRESS}: kept (read by dev's HEAD)`);
    expect(Object.fromEntries(new URL(calls[0].url, "http://x").searchParams)).toEqual({ target: "tables/a.parquet", ref: "dev" });
  });

  it("shows why an address cannot be explained, and sends nothing for an empty one", async () => {
    const calls = stubFetch(() => ({ status: 404, statusText: "Not Found", body: { detail: "no GC run of this repository yet" } }));
    renderPage(<Explain dagId={DAG} />);
    ask("   ");
    expect(calls).toHaveLength(0);
    ask(ADDRESS);
    expect((await screen.findByTestId("gc-explain-error")).textContent).toBe("no GC run of this repository yet"); // the server's words alone
    expect(screen.queryByTestId("gc-explain-answer")).toBeNull();
  });

  it("shows the status when the answer has no message of its own", async () => {
    stubFetch(() => ({ status: 502, statusText: "Bad Gateway", body: "upstream down" }));
    renderPage(<Explain dagId={DAG} />);
    ask(ADDRESS);
    expect((await screen.findByTestId("gc-explain-error")).textContent).toBe("502 Bad Gateway");
  });
});
