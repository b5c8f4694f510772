"""The chaos run's figures as docs/safety.md shows them: faults by service and phase, and the totals."""

from __future__ import annotations

from collections import Counter

from lakefs_sandbox.chaos.faults import PHASES, SERVICES


def problems(result: dict) -> list[str]:
    """Return what the chaos run showed that it must not: a loss, a delete outside the candidates, a stuck run, garbage left."""
    out = []
    for r in [*result["runs"], result["quiet"]]:
        c = r["check"] or {}
        if c.get("lost"):
            out.append(f"run {r['index']} ({r['run_id']}): {len(c['lost'])} live objects lost, e.g. {c['lost'][:5]}")
        if c.get("forgotten"):
            out.append(
                f"run {r['index']}: {len(c['forgotten'])} confirmed candidates of its sweep still stored, e.g. {c['forgotten'][:5]}"
            )
        if c.get("outside"):
            out.append(
                f"run {r['index']}: {len(c['outside'])} keys deleted outside every mark's candidates, e.g. {c['outside'][:5]}"
            )
        if r["state"] not in ("success", "failed"):
            out.append(f"run {r['index']} ({r['run_id']}) ended {r['state']}")
        if r["state"] == "failed" and not r["reason"]:
            out.append(f"run {r['index']} failed without a reason")
        if r.get("restore") and (r["restore"]["unreadable"] or r["restore"]["exit"] not in (0, 1)):
            out.append(f"run {r['index']}: lakefs-gc restore {r['restore']}")
    q = result["quiet"]
    if q["state"] != "success":
        out.append(f"the quiet run ended {q['state']}: {q['reason']}")
    if (q["check"] or {}).get("garbage_left"):
        g = q["check"]["garbage_left"]
        out.append(f"{len(g)} garbage objects left after the quiet run, e.g. {g[:5]}")
    return out


def phase_struck(r: dict) -> str:
    """Return the phase a run's fault struck in: the task it aimed at when running then, else the first running task, else "between"."""
    running = [t for t in r["struck_during"] if not t.startswith("(")]
    if r["fault"]["phase"] in running:
        return r["fault"]["phase"]
    return running[0] if running else "between"


def markdown(result: dict) -> str:
    """Return the table of faults by service (rows) and phase (columns), then the totals."""
    runs = result["runs"]
    cells = Counter((r["fault"]["service"], phase_struck(r)) for r in runs if r["fault"])
    phases = [p for p in PHASES if any(ph == p for _, ph in cells)]
    lines = ["| service | " + " | ".join(phases) + " | faults |", "|---" * (len(phases) + 2) + "|"]
    for s in SERVICES:
        row = [str(cells.get((s, p), "")) for p in phases]
        lines.append(f"| {s} | " + " | ".join(row) + f" | {sum(cells.get((s, p), 0) for p in phases)} |")
    ways = Counter(r["fault"]["way"] for r in runs if r["fault"])
    states = Counter(r["state"] for r in runs)
    quiet = result["quiet"]
    checked = max((r["check"] or {}).get("live", 0) for r in [*runs, quiet])
    lost = sum(len((r["check"] or {}).get("lost", [])) for r in [*runs, quiet])
    outside = sum(len((r["check"] or {}).get("outside", [])) for r in [*runs, quiet])
    forgotten = sum(len((r["check"] or {}).get("forgotten", [])) for r in [*runs, quiet])
    twice = max((r["check"] or {}).get("deleted_twice", 0) for r in [*runs, quiet])
    retried = sum(1 for r in runs for t, n in r["tries"].items() if n and n > 1)
    restores = [r["restore"] for r in runs if r.get("restore")]
    w = result["writers"]
    lines += [
        "",
        f"- seed {result['seed']}, {len(runs)} runs, {sum(ways.values())} faults ({ways['kill']} kills, "
        f"{ways['pause']} pauses), {result['seconds'] / 60:.0f} minutes",
        f"- runs: {states.get('success', 0)} succeeded, {states.get('failed', 0)} failed closed, "
        f"{states.get('stuck', 0)} stuck; {retried} task retries",
        f"- writers: {sum(w['ok'].values())} operations took effect, {sum(w['failed'].values())} failed "
        f"under faults, {w['commits']} commits",
        f"- live objects checked after every run (at most {checked:,}); lost: **{lost}**; deletes outside "
        f"every mark's confirmed candidates: **{outside}**; a swept candidate left by a successful run: "
        f"**{forgotten}**; keys deleted twice (a retried part, already gone the second time): {twice}",
        f"- restores after a struck sweep: {len(restores)}, keys restored "
        f"{sum(r['restored'] for r in restores)}, unreadable after restore "
        f"{sum(len(r['unreadable']) for r in restores)}",
        f"- the quiet run: {quiet['state']}, deleted {quiet['deleted']}; garbage left: "
        f"**{len((quiet['check'] or {}).get('garbage_left', []))}**",
    ]
    return "\n".join(lines)
