// The field check by Ajv (src/components/paramCheck.ts) against the hand-written checker it replaced,
// kept here as the reference: over the GC DAG's Param shapes and many typed texts, the same fields
// are refused with the same words, and the same values are sent.
import { describe, expect, it, vi } from "vitest";
import { checkParam, type Schema } from "../src/components/paramCheck";

// the form's checker until Ajv took over (TriggerForm.tsx), unchanged
const types = (s: Schema): string[] => (Array.isArray(s.type) ? (s.type as string[]) : s.type ? [s.type as string] : []);
const bounds = (s: Schema): { min?: number; max?: number } => {
  const parts = [s, ...(((s.allOf as Schema[] | undefined) ?? []))];
  const out: { min?: number; max?: number } = {};
  for (const x of parts) {
    if (typeof x.minimum === "number") out.min = Math.max(out.min ?? -Infinity, x.minimum);
    if (typeof x.maximum === "number") out.max = Math.min(out.max ?? Infinity, x.maximum);
  }
  return out;
};
const legacy = (text: string, s: Schema): { value?: unknown; error?: string } => {
  const ts = types(s);
  if (text.trim() === "") return ts.includes("null") ? { value: null } : { error: "required: give a value" };
  if (Array.isArray(s.enum)) {
    return (s.enum as unknown[]).includes(text) ? { value: text } : { error: `must be one of ${(s.enum as unknown[]).join(", ")}` };
  }
  if (ts.includes("integer") || ts.includes("number")) {
    const v = Number(text.trim());
    if (!Number.isFinite(v)) return { error: `must be a number, got ${JSON.stringify(text)}` };
    if (!ts.includes("number") && !Number.isInteger(v)) return { error: `must be a whole number, got ${text}` };
    const { min, max } = bounds(s);
    if (min !== undefined && v < min) return { error: `must be at least ${min}, got ${v}` };
    if (max !== undefined && v > max) return { error: `must be at most ${max}, got ${v}` };
    return { value: v };
  }
  if (typeof s.minLength === "number" && text.length < s.minLength) return { error: `must have at least ${s.minLength} characters` };
  return { value: text };
};

// the shapes of plugins/lakefs_gc_airflow/params.py and factory.py (the range in allOf, never on top)
const SCHEMAS: Record<string, Schema> = {
  mode: { type: "string", enum: ["mark_and_sweep", "mark_only", "sweep_only"], title: "Run mode" },
  mark_id: { type: ["null", "string"], title: "Mark id" },
  run_id: { type: "string", minLength: 1, title: "GC run to undo" },
  min_age_seconds: { type: "integer", title: "Minimum object age (s)", allOf: [{ minimum: 0 }] },
  confirm_after_seconds: { type: "integer", allOf: [{ minimum: -1, maximum: 31536000 }] },
  max_delete_share: { type: "number", title: "max share", allOf: [{ minimum: 0, maximum: 1 }] },
  delete_rate: { type: "number", allOf: [{ minimum: 0 }] },
  delete_batch_size: { type: "integer", allOf: [{ minimum: 1, maximum: 1000 }] },
  nullable_count: { type: ["null", "integer"], allOf: [{ minimum: 1 }] },
  top_level_range: { type: "number", minimum: 2, maximum: 8 },
};
const TEXTS = ["", " ", "0", "1", "-1", "-2", "5", "0.5", "1.5", " 20 ", "1e3", "0x10", "1000", "1001", "31536001",
  "abc", "ten", "Infinity", "NaN", "true", "null", "x", "mark_only", "sweep", "mark_and_sweep ", "3", "8.0", "9"];

describe("checkParam (Ajv)", () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    it(`agrees with the old checker on ${name}`, () => {
      for (const text of TEXTS) expect([text, checkParam(text, schema)]).toEqual([text, legacy(text, schema)]);
    });
  }

  it("words the reasons the form has always shown", () => {
    expect(checkParam("5", SCHEMAS.max_delete_share)).toEqual({ error: "must be at most 1, got 5" });
    expect(checkParam("-3", SCHEMAS.min_age_seconds)).toEqual({ error: "must be at least 0, got -3" });
    expect(checkParam("ten", SCHEMAS.min_age_seconds)).toEqual({ error: 'must be a number, got "ten"' });
    expect(checkParam("1.5", SCHEMAS.min_age_seconds)).toEqual({ error: "must be a whole number, got 1.5" });
    expect(checkParam("", SCHEMAS.run_id)).toEqual({ error: "required: give a value" });
    expect(checkParam("sweep", SCHEMAS.mode)).toEqual({ error: "must be one of mark_and_sweep, mark_only, sweep_only" });
  });

  it("checks what the old checker did not, in Ajv's words", () => {
    expect(checkParam("0", { type: "number", exclusiveMinimum: 0 })).toEqual({ error: "must be > 0, got 0" });
    expect(checkParam("abcd", { type: "string", maxLength: 3 })).toEqual({ error: "must NOT have more than 3 characters, got \"abcd\"" });
    expect(checkParam("x", { type: "string", pattern: "^[a-z]{2,}$" }).error).toMatch(/^must match pattern/);
  });

  it("leaves to the server a schema Ajv cannot compile", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    expect(checkParam("7", { type: "integer", allOf: "not a list" })).toEqual({ value: 7 });
    expect(warn).toHaveBeenCalledOnce();
  });
});
