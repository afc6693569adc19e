// Minimal client: polls the API once a second; every control goes through the HTTP API.
"use strict";
const $ = (id) => document.getElementById(id);
const text = (value) => document.createTextNode(value == null ? "" : String(value));

function item(parts) {
  const li = document.createElement("li");
  for (const [cls, value] of parts) {
    const span = document.createElement("span");
    if (cls) span.className = cls;
    span.appendChild(text(value));
    li.appendChild(span);
    li.appendChild(text(" "));
  }
  return li;
}

async function getJson(path) {
  const response = await fetch(path, { cache: "no-store" });
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

async function refresh() {
  try {
    const [runs, queue, questions] = await Promise.all([getJson("/api/runs"), getJson("/api/queue"), getJson("/api/questions")]);
    $("server-state").textContent = "";
    $("runs").replaceChildren(...runs.slice(0, 30).map((r) => item([
      ["status " + r.status, r.status], ["", r.runId], ["muted", r.summary || r.task],
    ])));
    $("queue").replaceChildren(...queue.filter((q) => q.status !== "done" && q.status !== "cancelled").map((q) => item([
      ["status", q.status], ["", q.task], ["muted", q.question || ""],
    ])));
    $("questions-section").hidden = questions.length === 0;
    $("questions").replaceChildren(...questions.map(questionItem));
  } catch (error) {
    $("server-state").textContent = "server unavailable";
  }
}

function questionItem(q) {
  const li = item([["", q.question], ["muted", q.context || ""]]);
  const input = document.createElement("input");
  const button = document.createElement("button");
  button.textContent = "Answer";
  button.onclick = async () => {
    await fetch("/api/answer", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ id: q.id, answer: input.value }) });
    refresh();
  };
  li.append(input, button);
  return li;
}

$("task-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = { task: $("task").value, effort: $("effort").value };
  await fetch("/api/queue", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  $("task").value = "";
  refresh();
});

refresh();
setInterval(refresh, 1000);
