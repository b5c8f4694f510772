// Writes dist/SOURCES.sha256: the hash of the sources the bundle was built from
// (tests/airflow/gc_page/test_gc_page_runs.py recomputes it, so a bundle older than its sources fails the tests).
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";

// every file under src/, sorted by its path (the same order as the test's)
const sources = readdirSync("src", { recursive: true }).map((f) => "src/" + f.split("\\").join("/"))
  .filter((f) => statSync(f).isFile()).sort();
const files = ["package.json", "package-lock.json", "tsconfig.json", "vite.config.ts", ...sources];
const h = createHash("sha256");
for (const f of files) {
  h.update(f + "\0");
  h.update(readFileSync(f));
  h.update("\0");
}
writeFileSync("dist/SOURCES.sha256", h.digest("hex") + "\n");
