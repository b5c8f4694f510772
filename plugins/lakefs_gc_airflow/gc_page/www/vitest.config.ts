// The page's UI tests (npm test: vitest run; make test runs it): test/*.test.tsx in jsdom, each
// render inside Chakra's provider (test/render.tsx). Its own file, so vite.config.ts's production
// defines stay out of the tests (React's act() needs its development build).
import react from "@vitejs/plugin-react-swc";
import { defineConfig } from "vitest/config";

export default defineConfig({
  plugins: [react()],
  test: {
    environment: "jsdom",
    include: ["test/**/*.test.{ts,tsx}"],
    setupFiles: ["test/setup.ts"],
  },
});
