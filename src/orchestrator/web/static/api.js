// The HTTP client of the shell: JSON in and out, API error codes surfaced as ApiError, and a
// reachability callback so the page can show (and clear) its "server unavailable" banner.

/** An API failure: `status` 0 means the server could not be reached at all. */
export class ApiError extends Error {
  constructor(status, code, path) {
    super(`${path}: ${code} (${status})`);
    this.status = status;
    this.code = code;
    this.path = path;
  }

  /** True when the failure says nothing about the request, only that the server is not there. */
  get unreachable() {
    const gateway = this.status === 502 || this.status === 504;
    return this.status === 0 || gateway || (this.status === 503 && this.code !== "shutting_down");
  }
}

const MESSAGES = {
  invalid_body: "The server rejected the request as invalid.",
  not_found: "Not found — it may have changed meanwhile.",
  run_in_progress: "A run is already in progress.",
  run_id_collision: "The new run id collided with an existing run; submit again.",
  run_not_active: "That run is no longer active.",
  status_forbidden: "That item's status no longer allows this change.",
  shutting_down: "The server is shutting down and accepts no new runs.",
  no_run: "There is no run yet.",
  unauthorized: "Access token missing or wrong: open the link `orchestrator serve` printed at start (or run `orchestrator token`).",
  forbidden_origin: "The server refused a request from this page's origin.",
  forbidden_host: "The server refused the address it was reached at (see ORCHESTRATOR_ALLOWED_HOSTS).",
  unsupported_media_type: "The server accepts JSON bodies only.",
  internal_error: "The server failed on this request; its log says more.",
  unreachable: "The server could not be reached.",
};

/** A readable sentence for an error, always naming the API's own code. */
export function errorMessage(error) {
  if (error instanceof ApiError) {
    const text = MESSAGES[error.code] || `The request failed (HTTP ${error.status}).`;
    return `${text} [${error.code}]`;
  }
  return String(error && error.message ? error.message : error);
}

/** How many paths' last answers the conditional-GET cache keeps. */
const TAGGED_PATHS = 24;

/**
 * `createApi({onReachable})` → `{get, post, put, patch, del}`; each resolves to the parsed JSON body or
 * rejects with ApiError. `onReachable(bool)` is told after every request whether the server answered.
 */
export function createApi({ onReachable = () => {} } = {}) {
  // Conditional GETs: the last ETag and body per path (bounded), so a poll of an answer that has not
  // changed (every poll of a finished run) is a body-less 304 and hands back the same object.
  const tagged = new Map();
  async function request(method, path, body) {
    const headers = body === undefined ? {} : { "content-type": "application/json" };
    const known = method === "GET" ? tagged.get(path) : undefined;
    if (known !== undefined) headers["if-none-match"] = known.etag;
    let response;
    try {
      response = await fetch(path, {
        method,
        cache: "no-store",
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch {
      onReachable(false);
      throw new ApiError(0, "unreachable", path);
    }
    if (response.status === 304 && known !== undefined) {
      tagged.delete(path);
      tagged.set(path, known);
      onReachable(true);
      return known.data;
    }
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    if (!response.ok) {
      const code = data && typeof data.error === "string" ? data.error : `http_${response.status}`;
      if (response.status === 401 && code === "unauthorized") {
        location.assign("/"); // the token changed or the cookie is gone: "/" shows where the link is printed
      }
      const error = new ApiError(response.status, code, path);
      onReachable(!error.unreachable);
      throw error;
    }
    onReachable(true);
    const etag = method === "GET" ? response.headers.get("etag") : null;
    if (etag) {
      tagged.delete(path);
      tagged.set(path, { etag, data });
      if (tagged.size > TAGGED_PATHS) tagged.delete(tagged.keys().next().value);
    }
    return data;
  }
  return {
    get: (path) => request("GET", path),
    post: (path, body = {}) => request("POST", path, body),
    put: (path, body) => request("PUT", path, body),
    patch: (path, body) => request("PATCH", path, body),
    del: (path) => request("DELETE", path),
  };
}

/** `encodeURIComponent` for a path segment (run and item ids). */
export const seg = (value) => encodeURIComponent(String(value));
