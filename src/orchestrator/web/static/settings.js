// Project settings (effort and logging-level defaults, GET|PUT /api/settings) and the resolution chain
// the compose selectors start from.

import { errorMessage } from "./api.js";
import { h } from "./dom.js";

export const EFFORTS = ["quick", "standard", "thorough"];
export const LOG_LEVELS = ["full", "standard"];
export const EFFORT_HINTS = {
  quick: "fastest, most direct",
  standard: "recommended",
  thorough: "slowest, most careful",
};

/** The deployment's default logging level, when /api/config carries one. */
function deploymentLevel(config) {
  const level = config && ((config.logging && config.logging.level) || config.logLevel);
  return LOG_LEVELS.includes(level) ? level : null;
}

/**
 * The chain of the seed, resolved once: effort = project setting, else "standard"; logging level =
 * project setting, else the deployment's level, else "full". Also says where each value came from.
 */
export function resolveDefaults(settings, config) {
  const effort = settings && EFFORTS.includes(settings.effort) ? settings.effort : "standard";
  const projectLevel = settings && LOG_LEVELS.includes(settings.logLevel) ? settings.logLevel : null;
  const deployed = deploymentLevel(config);
  return {
    effort,
    effortSource: effort === (settings && settings.effort) ? "project" : "default",
    logLevel: projectLevel || deployed || "full",
    logLevelSource: projectLevel ? "project" : deployed ? "deployment" : "default",
  };
}

export function effortOptions(selected) {
  return EFFORTS.map((tier) =>
    h("option", { value: tier, selected: tier === selected }, tier === "standard" ? "standard (recommended)" : tier),
  );
}

/** Mount the settings form into `root` (a <details>); `app.settingsSaved(stored)` is told after a save. */
export function createSettingsPanel(root, app) {
  const effort = h("select", { id: "settings-effort", testid: "settings-effort" }, effortOptions("standard"));
  const level = h("select", { id: "settings-loglevel", testid: "settings-loglevel" });
  const status = h("p", { class: "form-status", testid: "settings-status", role: "status" });
  const save = h("button", { type: "submit", class: "btn", testid: "settings-save" }, "Save settings");
  const form = h(
    "form",
    { class: "settings-form", testid: "settings-form" },
    h("div", { class: "field-row" },
      h("label", { for: "settings-effort" }, "Default effort"), effort,
      h("label", { for: "settings-loglevel" }, "Default log level"), level),
    h("p", { class: "hint" },
      "New runs use these unless the task says otherwise. The standard log level keeps event counts and usage but ",
      "drops conversation bodies and tool results."),
    h("div", { class: "actions" }, save, status),
  );
  root.appendChild(form);

  function levelOptions(selected) {
    const deployed = deploymentLevel(app.state.config);
    const fallback = deployed ? `deployment default (${deployed})` : "no project default (full)";
    level.replaceChildren(
      h("option", { value: "" }, fallback),
      ...LOG_LEVELS.map((l) => h("option", { value: l }, l)),
    );
    level.value = selected || "";
  }

  function load() {
    const current = app.state.settings || {};
    effort.value = EFFORTS.includes(current.effort) ? current.effort : "standard";
    levelOptions(LOG_LEVELS.includes(current.logLevel) ? current.logLevel : "");
    status.textContent = current.effort ? "" : "No project settings saved yet: runs default to standard effort.";
  }

  root.addEventListener("toggle", () => {
    if (root.open) load();
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    status.textContent = "Saving…";
    status.classList.remove("error");
    const body = { effort: effort.value, ...(level.value ? { logLevel: level.value } : {}) };
    save.disabled = true;
    try {
      const stored = await app.api.put("/api/settings", body);
      status.textContent = `Saved: effort ${stored.effort}, log level ${stored.logLevel || "not set"}.`;
      app.settingsSaved(stored);
    } catch (error) {
      status.textContent = errorMessage(error);
      status.classList.add("error");
    } finally {
      save.disabled = false;
    }
  });

  load();
  return { load };
}
