// A render inside Chakra UI v3's provider (the host gives it in Airflow), and a fetch that answers
// from a table: each call recorded, its answer chosen by the URL (and method).
import { ChakraProvider, defaultSystem } from "@chakra-ui/react";
import { render } from "@testing-library/react";
import type { ReactElement } from "react";
import { vi } from "vitest";

export const renderPage = (ui: ReactElement) => render(<ChakraProvider value={defaultSystem}>{ui}</ChakraProvider>);

export type Call = { url: string; method: string; body: unknown };
type Answer = { status?: number; statusText?: string; body: unknown };

/** A stub of the global fetch: route(url, method) gives the answer; returns the calls made. */
export const stubFetch = (route: (url: string, method: string) => Answer): Call[] => {
  const calls: Call[] = [];
  vi.stubGlobal("fetch", vi.fn(async (url: string, init?: RequestInit) => {
    const method = init?.method ?? "GET";
    calls.push({ url, method, body: init?.body ? JSON.parse(String(init.body)) : undefined });
    const { status = 200, statusText = status === 200 ? "OK" : "Bad Request", body } = route(url, method);
    return new Response(JSON.stringify(body), { status, statusText, headers: { "Content-Type": "application/json" } });
  }));
  return calls;
};
