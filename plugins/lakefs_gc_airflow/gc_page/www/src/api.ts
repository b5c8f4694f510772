// Our API (lakefs-gc/api/..., same origin; Airflow's session cookie authenticates it), the links
// into Airflow's own pages, and how the page writes counts, sizes and times.
export const base = () => new URL(document.baseURI).pathname.replace(/\/$/, "");

// A refused request's error is the server's own message (FastAPI's detail: it says what is wrong
// and what to do), without the status line; the status alone when the answer has no detail.
export const api = async <T,>(path: string): Promise<T> => {
  const r = await fetch(`${base()}/lakefs-gc/api${path}`, { credentials: "same-origin" });
  if (!r.ok) {
    let detail = `${r.status} ${r.statusText}`;
    try {
      const body = await r.json();
      if (body?.detail) detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    } catch {
      /* not JSON */
    }
    throw new Error(detail);
  }
  return (await r.json()) as T;
};

/** "1 run", "2 runs": a count and its noun, in the plural when it is not one. */
export const plural = (count: number, noun: string, nouns = `${noun}s`) => `${count.toLocaleString("en-US")} ${count === 1 ? noun : nouns}`;

export const n = (v: number | null | undefined) => (v === null || v === undefined ? "" : v.toLocaleString("en-US"));

export const bytes = (v: number | null | undefined) => {
  if (v === null || v === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let x = v;
  let i = 0;
  while (x >= 1024 && i < units.length - 1) {
    x /= 1024;
    i += 1;
  }
  return i === 0 ? `${v} B` : `${x.toFixed(1)} ${units[i]}`;
};

export const when = (iso: string | null | undefined) => (iso ? iso.replace("T", " ").replace(/\.\d+/, "").replace("+00:00", "Z") : "");

export const runUrl = (dagId: string, runId: string) => `${base()}/dags/${encodeURIComponent(dagId)}/runs/${encodeURIComponent(runId)}`;
export const taskUrl = (dagId: string, runId: string, task: string) => `${runUrl(dagId, runId)}/tasks/${encodeURIComponent(task)}`;
