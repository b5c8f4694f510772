// What if: the branch starts empty (the branches found are suggestions, not a choice made for you:
// the first is often the default branch, whose deletion lakeFS refuses); nothing is sent without a
// branch to delete; a refusal shows the server's message alone.
import { fireEvent, screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { WhatIf } from "../src/components/WhatIf";
import { renderPage, stubFetch } from "./render";

const DAG = "lakefs_gc__sample-repo";

describe("WhatIf", () => {
  it("starts with an empty branch and offers the branches as suggestions", () => {
    stubFetch(() => ({ body: {} }));
    renderPage(<WhatIf dagId={DAG} branches={["main", "feature"]} />);
    const branch = screen.getByTestId("gc-whatif-branch") as HTMLInputElement;
    expect(branch.value).toBe("");
    const list = document.getElementById(branch.getAttribute("list") ?? "");
    expect(Array.from(list?.querySelectorAll("option") ?? []).map((o) => o.getAttribute("value"))).toEqual(["main", "feature"]);
  });

  it("sends nothing without a branch to delete, then prices the branch typed", async () => {
    const calls = stubFetch(() => ({ body: { change: "branch feature deleted", lines: ["deleting feature frees 3 objects"] } }));
    renderPage(<WhatIf dagId={DAG} branches={["main", "feature"]} />);
    fireEvent.click(screen.getByTestId("gc-whatif-go"));
    expect(calls).toHaveLength(0);
    expect(screen.getByTestId("gc-whatif-error").textContent).toBe("name the branch to price its deletion");
    fireEvent.change(screen.getByTestId("gc-whatif-branch"), { target: { value: "feature" } });
    fireEvent.click(screen.getByTestId("gc-whatif-go"));
    expect((await screen.findByTestId("gc-whatif-answer")).textContent).toBe("deleting feature frees 3 objects");
    expect(Object.fromEntries(new URL(calls[0].url, "http://x").searchParams)).toEqual({ delete_branch: "feature" });
    expect(screen.queryByTestId("gc-whatif-error")).toBeNull();
  });

  it("shows lakeFS's refusal in the server's words", async () => {
    stubFetch(() => ({ status: 400, body: { detail: "main is the default branch of sample-repo: lakeFS refuses to delete it" } }));
    renderPage(<WhatIf dagId={DAG} branches={["main"]} />);
    fireEvent.change(screen.getByTestId("gc-whatif-branch"), { target: { value: "main" } });
    fireEvent.click(screen.getByTestId("gc-whatif-go"));
    expect((await screen.findByTestId("gc-whatif-error")).textContent)
      .toBe("main is the default branch of sample-repo: lakeFS refuses to delete it");
  });
});
