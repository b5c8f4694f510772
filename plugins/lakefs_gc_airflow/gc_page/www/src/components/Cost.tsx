// A run's cost (issue 54): its storage requests by kind, their price, and what the bytes it freed now save a
// month, in the runs table's cost cell; a run whose steps did not count their requests has an empty cell.
import { Text } from "@chakra-ui/react";
import { bytes, n } from "../api";
import type { Run } from "../types";

const KINDS = ["LIST", "HEAD", "GET", "PUT", "DELETE", "INVENTORY"];

/** US dollars as the report says them: to the cent from a dollar, else the first two figures. */
export const usd = (v: number): string => {
  if (v === 0) return "$0";
  if (v >= 1) return `$${v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
  return v >= 1e-6 ? `$${Number(v.toPrecision(2))}` : "less than $0.000001";
};

/** The requests by kind, in the report's order: "LIST 12, GET 3". */
export const requestsText = (requests: Record<string, number>): string =>
  [...KINDS, ...Object.keys(requests).filter((k) => !KINDS.includes(k))]
    .filter((k) => requests[k]).map((k) => `${k} ${n(requests[k])}`).join(", ");

export const CostCell = ({ run }: { run: Run }) => {
  const c = run.cost;
  if (!c) return null;
  const total = Object.values(c.requests).reduce((a, b) => a + b, 0);
  const prices = c.prices_as_of === "config" ? "the config's prices" : `list prices of ${c.prices_as_of}`;
  return (
    <span data-testid="gc-run-cost" title={`${requestsText(c.requests)}; at ${prices}`}>
      <Text>{usd(c.request_cost_usd)} for {n(total)} {total === 1 ? "request" : "requests"}</Text>
      {c.saving_bytes ? <Text fontSize="xs">saves {usd(c.monthly_saving_usd)} a month ({bytes(c.saving_bytes)} freed now)</Text> : null}
    </span>
  );
};
