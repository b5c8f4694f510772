// Airflow's React plugin template (apache/airflow dev/react-plugin-tools), with one change: Chakra UI
// and Emotion are taken from the host too (the template bundles its own Chakra), so the page wears
// the host's theme; chart.js is bundled. The UI imports the bundle as an ES module and reads the
// function it sets on globalThis.AirflowPlugin (a UMD build named so).
import react from "@vitejs/plugin-react-swc";
import { resolve } from "node:path";
import { defineConfig } from "vite";

export default defineConfig({
  plugins: [react()],
  define: {
    global: "globalThis",
    "process.env": "{}",
    "process.env.NODE_ENV": JSON.stringify("production"),
  },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    lib: {
      entry: resolve("src", "main.tsx"),
      name: "AirflowPlugin",
      fileName: () => "main.umd.js", // .js: served as JavaScript without a MIME type of our own
      formats: ["umd"],
    },
    rollupOptions: {
      external: ["react", "react-dom", "react/jsx-runtime", "@chakra-ui/react", "@emotion/react"],
      output: {
        globals: {
          react: "React",
          "react-dom": "ReactDOM",
          "react/jsx-runtime": "ReactJSXRuntime",
          "@chakra-ui/react": "ChakraUI",
          "@emotion/react": "EmotionReact",
        },
      },
    },
  },
});
