// One field of the trigger form: the text typed into it, turned into the value its Param's type wants
// (ours: numbers, booleans, null), then checked against the Param's JSON schema by Ajv, with the
// draft Airflow's own check uses (jsonschema, no $schema: 2020-12); Ajv's first error becomes the
// field's reason, in the words the form has always shown ("must be at most 1, got 5").
import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020";

export type Schema = Record<string, unknown>;

// strict: false: a Param's schema carries Airflow's own keys (title, values_display, section...),
// which Ajv's strict mode refuses as unknown keywords; formats are not checked (the server does).
const ajv = new Ajv2020({ strict: false, allErrors: false });
const compiled = new WeakMap<Schema, ValidateFunction | null>();

/** The Param's schema compiled once; null when Ajv cannot compile it (the server still checks). */
const validator = (s: Schema): ValidateFunction | null => {
  if (!compiled.has(s)) {
    let v: ValidateFunction | null = null;
    try {
      v = ajv.compile(s);
    } catch (e) {
      console.warn("lakefs-gc: a Param's schema Ajv cannot compile; the server checks it", s, e);
    }
    compiled.set(s, v);
  }
  return compiled.get(s) ?? null;
};

export const types = (s: Schema): string[] => (Array.isArray(s.type) ? (s.type as string[]) : s.type ? [s.type as string] : []);

/** The typed text as the Param's type wants it; text that cannot be one stays text, for Ajv to refuse. */
export const toValue = (text: string, s: Schema): unknown => {
  const ts = types(s);
  if (text.trim() === "") return null; // empty: null, which only a Param that may be null accepts
  if (ts.includes("string")) return text; // a string Param keeps what was typed, digits included
  if (ts.includes("integer") || ts.includes("number")) {
    const v = Number(text.trim());
    if (Number.isFinite(v)) return v;
  }
  if (ts.includes("boolean") && ["true", "false"].includes(text.trim())) return text.trim() === "true";
  return text;
};

/** Ajv's error in the form's words. */
const reason = (e: ErrorObject, text: string, value: unknown, s: Schema): string => {
  const p = e.params as Record<string, unknown>;
  const at = e.instancePath ? `${e.instancePath}: ` : "";
  if (!at) {
    if (e.keyword === "type") {
      const ts = types(s);
      if (value === null) return "required: give a value";
      if ((ts.includes("integer") || ts.includes("number")) && typeof value !== "number") return `must be a number, got ${JSON.stringify(text)}`;
      if (ts.includes("integer") && typeof value === "number") return `must be a whole number, got ${text}`;
    }
    if (e.keyword === "enum") return `must be one of ${(p.allowedValues as unknown[]).join(", ")}`;
    if (e.keyword === "minimum") return `must be at least ${p.limit}, got ${value}`;
    if (e.keyword === "maximum") return `must be at most ${p.limit}, got ${value}`;
    if (e.keyword === "minLength") return `must have at least ${p.limit} characters`;
  }
  return `${at}${e.message ?? e.keyword}, got ${JSON.stringify(value)}`;
};

/** The value typed into a field, as the Param's schema wants it, or why it cannot be. */
export const checkParam = (text: string, s: Schema): { value?: unknown; error?: string } => {
  const value = toValue(text, s);
  const validate = validator(s);
  if (!validate || validate(value)) return { value };
  const first = validate.errors?.[0];
  return { error: first ? reason(first, text, value, s) : "refused by its schema" };
};

/** lakeFS's grace period as the page knows it: seconds, and where from ("lakeFS", or the report of a run). */
export type Grace = { seconds: number; source: string | null };

/**
 * The one check across fields: a minimum age below lakeFS's grace period. Without the override the
 * run is refused by prepare_run (the warning says how to fix it before sending); with it, the run
 * may delete objects uploaded but not yet linked. Null when the age is not below the period, or
 * the period is unknown.
 */
export const graceWarning = (minAge: unknown, override: boolean, grace: Grace | null | undefined): string | null => {
  if (!grace || typeof minAge !== "number" || minAge >= grace.seconds) return null;
  const period = `lakeFS's grace period of ${grace.seconds.toLocaleString("en-US")} s${
    grace.source && grace.source !== "lakeFS" ? ` (as ${grace.source} recorded it)` : ""}`;
  if (override) {
    return `min_age_seconds ${minAge.toLocaleString("en-US")} is below ${period} and unsafe_min_age_override is set: `
      + "this run may delete objects uploaded but not yet linked.";
  }
  return `min_age_seconds ${minAge.toLocaleString("en-US")} is below ${period}: prepare_run will refuse the run. `
    + `Raise min_age_seconds to at least ${grace.seconds}, or set unsafe_min_age_override.`;
};
