// The lakeFS GC page: per repository, its GC runs over time (charts), the latest run in detail,
// and every run with links to its DAG run and task logs. Data: GET lakefs-gc/api/... (our FastAPI
// app, same origin; Airflow's session cookie authenticates it).
//
// The bundle's entry (vite.config.ts builds it as the UMD library AirflowPlugin, the global Airflow's
// UI reads): its one export, the default, is the component the UI mounts for both react_apps of
// gc_page/__init__.py (the Browse menu's page, every repository; a GC DAG's tab, given its dagId).
// The answers' types: types.ts; the API, the links and the formatting: api.ts; the page and one
// repository's view: pages/; their parts: components/.
import GCPage from "./pages/GCPage";

export default GCPage;
