// Orphaned namespaces on the page: each with its size (at least, for a listing stopped at its bound; why not,
// when it could not be listed) and since when its repository is gone; nothing when there are none.
import { screen } from "@testing-library/react";
import { describe, expect, it } from "vitest";
import { OrphanedNamespaces } from "../src/components/Orphans";
import type { OrphanedNamespace } from "../src/types";
import { renderPage } from "./render";

const orphan = (over: Partial<OrphanedNamespace>): OrphanedNamespace => ({
  namespace: "s3://lakefs-data/gone", lakefs_conn_id: "lakefs_default", repository: "gone",
  first_seen: "2026-10-01T00:00:00+00:00", last_seen: "2026-11-01T00:00:00+00:00", orphaned_at: "2026-11-01T00:15:00+00:00",
  objects: 3, bytes: 2048, complete: true, measured_at: "2026-11-01T00:15:02+00:00", size_problem: null, held_by: null, ...over });

describe("the orphaned namespaces", () => {
  it("say each one's size and since when its repository is gone", () => {
    renderPage(<OrphanedNamespaces orphans={[
      orphan({}),
      orphan({ namespace: "s3://lakefs-data/big", repository: "big", objects: 100000, bytes: 1048576, complete: false }),
      orphan({ namespace: "s3://lakefs-data/dark", repository: "dark", objects: null, bytes: null,
        size_problem: "ClientError: AccessDenied" }),
    ]} />);
    const lines = screen.getAllByTestId("gc-orphan").map((e) => e.textContent);
    expect(lines).toEqual([
      "s3://lakefs-data/gone: 3 objects, 2.0 KiB; repository gone (lakefs_default) gone since 2026-11-01 00:15:00Z",
      "s3://lakefs-data/big: at least 100,000 objects, 1.0 MiB; repository big (lakefs_default) gone since 2026-11-01 00:15:00Z",
      "s3://lakefs-data/dark: size not known (ClientError: AccessDenied); repository dark (lakefs_default) gone since "
        + "2026-11-01 00:15:00Z",
    ]);
    expect(screen.getByTestId("gc-orphans").textContent).toContain("lakefs-gc reclaim-namespace NAMESPACE --confirm NAMESPACE");
  });

  it("show nothing when there are none", () => {
    renderPage(<OrphanedNamespaces orphans={[]} />);
    expect(screen.queryByTestId("gc-orphans")).toBeNull();
  });
});
