// Writes dist/SOURCES.sha256: the hash of the sources the bundle was built from
// (tests/airflow/test_gc_page.py recomputes it, so a bundle older than its sources fails the tests).
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";

const files = ["package.json", "package-lock.json", "tsconfig.json", "vite.config.ts", "src/main.tsx"];
const h = createHash("sha256");
for (const f of files) {
  h.update(f + "\0");
  h.update(readFileSync(f));
  h.update("\0");
}
writeFileSync("dist/SOURCES.sha256", h.digest("hex") + "\n");
