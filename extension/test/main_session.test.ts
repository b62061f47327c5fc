/**
 * The main-session role end to end against a fake `slate` (fake_slate.ts): the coordinator's
 * start and shutdown, the operator's hello, the root tools, background delivery, the
 * reservation hooks and the commands.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { mainSession } from "../main_session.ts";
import type { WidgetFactory } from "../widget.ts";
import { fakeSlate, LEASE_REFUSAL, PARENT } from "./fake_slate.ts";
import { FakePi } from "./fake_pi.ts";

const SESSION_ID = PARENT;
let dir: string;
let slate: string;
let logFile: string;

before(() => {
	dir = mkdtempSync(join(tmpdir(), "slate-main-"));
	slate = fakeSlate(dir);
	logFile = join(dir, "log.jsonl");
	process.env.FAKE_SLATE_LOG = logFile;
});
after(() => {
	rmSync(dir, { recursive: true, force: true });
});

type Record_ = {
	argv?: string[];
	cwd?: string;
	request?: string;
	params?: Record<string, unknown>;
	stdin?: string;
	watchRequest?: { width: number; rows?: number };
};

function log(): Record_[] {
	try {
		return readFileSync(logFile, "utf8")
			.split("\n")
			.filter((l) => l !== "")
			.map((l) => JSON.parse(l) as Record_);
	} catch {
		return [];
	}
}

async function until(predicate: () => boolean, ms = 5000): Promise<void> {
	const end = Date.now() + ms;
	while (!predicate()) {
		if (Date.now() > end) {
			throw new Error("condition not reached in time");
		}
		await new Promise((r) => setTimeout(r, 5));
	}
}

interface Notice {
	text: string;
	level: string | undefined;
}

function fakeCtx(notices: Notice[], widgets: unknown[] = [], hasUI = false) {
	return {
		cwd: dir,
		hasUI,
		sessionManager: {
			getSessionId: () => SESSION_ID,
			getSessionFile: () => join(dir, "sessions", `2026_${SESSION_ID}.jsonl`),
			getSessionDir: () => join(dir, "sessions"),
			getBranch: () => [],
		},
		ui: {
			notify: (text: string, level?: string) => notices.push({ text, level }),
			setWidget: (_key: string, content: unknown) => widgets.push(content),
		},
	};
}

/** What `/subagent-hub` asked the overlay to open. */
const hubsOpened: { slate: string; socket: string }[] = [];

function start(options: { extension?: string; env?: Record<string, string> } = {}) {
	const pi = new FakePi();
	mainSession(pi.api, {
		installation: { ok: true, installation: { slate, ...(options.extension === undefined ? {} : { extension: options.extension }) } },
		hostVersion: "1.6.0",
		client: "slate-pi-extension test",
		env: options.env ?? {},
		openHub: async (_ctx, hub) => {
			hubsOpened.push(hub);
		},
	});
	return pi;
}

/** Start the session and wait for it, as pi's first run does (the doctrine hook). */
async function started(pi: FakePi, notices: Notice[] = []): Promise<void> {
	await pi.emit("session_start", { type: "session_start", reason: "startup" }, fakeCtx(notices));
	await pi.emit("before_agent_start", { systemPrompt: "" });
}

test("the main role registers the tools the coordinator lists and the commands, and no worker tool", async () => {
	const pi = start();
	assert.deepEqual([...pi.tools.keys()], [], "no tool before the coordinator lists them");
	await started(pi);
	assert.deepEqual([...pi.tools.keys()].sort(), ["delegate_coordinate", "delegate_task", "subagent"]);
	assert.deepEqual([...pi.commands.keys()].sort(), [
		"slate",
		"subagent-hub",
		"subagent-profiles",
		"subagent-status",
		"subagent-steer",
		"subagent-stop",
	]);
	assert.ok(pi.tool("subagent").promptSnippet);
	assert.ok((pi.tool("subagent").promptGuidelines ?? []).every((g) => g.includes("subagent")));
	await pi.emit("session_shutdown", { reason: "quit" }, fakeCtx([]));
});

test("a session's coordinator: started with the contract's argv, hello as the operator with the hash, shut down at session_shutdown", async () => {
	writeFileSync(logFile, "");
	const pi = start({ extension: "ab12" });
	const notices: Notice[] = [];
	await started(pi, notices);
	const updates: unknown[] = [];
	const result = await pi
		.tool("delegate_task")
		.execute("c1", { assignment: "look", profile: "scout" }, undefined, (u: unknown) => void updates.push(u), {});
	assert.equal(result.content[0].text, "preview of call 6");
	assert.equal(updates.length, 1, "the live row became a partial result");
	const serve = log().find((r) => r.argv?.[0] === "serve");
	assert.deepEqual(serve?.argv, [
		"serve",
		"--pi-session",
		SESSION_ID,
		"--session-dir",
		join(dir, "sessions"),
		"--host-version",
		"1.6.0",
	]);
	assert.equal(serve?.cwd, dir);
	const hellos = log().filter((r) => r.request === "hello");
	assert.ok(hellos.length >= 2, "the operator's connection and the tool call's own");
	for (const h of hellos) {
		assert.deepEqual(h.params, { protocols: [2], client: { name: "slate-pi-extension test", extension: "ab12" } });
	}
	assert.deepEqual(log().find((r) => r.request === "callTool")?.params, {
		tool: "delegate_task",
		input: { assignment: "look", profile: "scout" },
		callId: "c1",
	});
	await pi.emit("session_shutdown", { type: "session_shutdown", reason: "quit" }, fakeCtx(notices));
	const requests = log().map((r) => r.request ?? r.stdin);
	assert.ok(requests.includes("shutdown"), "the shutdown request was sent");
	assert.deepEqual(notices, []);
	await assert.rejects(
		pi.tool("delegate_task").execute("c2", { assignment: "x" }, undefined, undefined, {}),
		/Slate is not running in this session: the session has shut down/,
	);
});

test("background delegate_task: accepted at once, then exactly one notification-only message", async () => {
	const pi = start();
	await started(pi);
	const result = await pi.tool("delegate_task").execute("c1", { assignment: "x", background: true }, undefined, undefined, {});
	assert.match(result.content[0].text, /^Accepted 1 task in the background \(call 7\)/);
	assert.equal((result.details as { call: number }).call, 7);
	await until(() => pi.sent.length === 1);
	await new Promise((r) => setTimeout(r, 100));
	assert.equal(pi.sent.length, 1, "one message per call");
	assert.deepEqual(pi.sent[0].options, { triggerTurn: false });
	assert.equal(pi.sent[0].message.customType, "slate-window-outcome");
	assert.equal(pi.sent[0].message.content, "preview of call 7");
	assert.equal(pi.sent[0].message.display, true);
	assert.equal((pi.sent[0].message.details as { call: number }).call, 7);
	await pi.emit("session_shutdown", { reason: "quit" }, fakeCtx([]));
});

test("subagent async: the one message wakes the parent as a follow-up", async () => {
	const pi = start();
	await started(pi);
	await pi.tool("subagent").execute("c1", { agent: "scout", task: "look", async: true }, undefined, undefined, {});
	await until(() => pi.sent.length === 1);
	assert.deepEqual(pi.sent[0].options, { triggerTurn: true, deliverAs: "followUp" });
	await pi.emit("session_shutdown", { reason: "quit" }, fakeCtx([]));
});

test("after session_shutdown a window that drains delivers nothing", async () => {
	const pi = start();
	await started(pi);
	await pi.tool("delegate_task").execute("c1", { assignment: "x", background: true }, undefined, undefined, {});
	await pi.emit("session_shutdown", { reason: "reload" }, fakeCtx([]));
	await new Promise((r) => setTimeout(r, 150));
	assert.equal(pi.sent.length, 0);
});

test("the reservation: bash blocked with the coordinator's reason while a child holds the lease, released at the end", async () => {
	process.env.FAKE_SLATE_LEASE = "1";
	try {
		writeFileSync(logFile, "");
		const pi = start();
		await pi.emit("session_start", { reason: "startup" }, fakeCtx([]));
		const blocked = await pi.emit("tool_call", { toolName: "bash", toolCallId: "t1", input: { command: "touch x" } });
		assert.deepEqual(blocked, { block: true, reason: LEASE_REFUSAL });
		await pi.emit("tool_execution_end", { toolName: "bash", toolCallId: "t1", isError: true });
		const allowed = await pi.emit("tool_call", { toolName: "read", toolCallId: "t2", input: { path: "x" } });
		assert.equal(allowed, undefined);
		const calls = log().filter((r) => r.request?.startsWith("parentTool"));
		assert.deepEqual(
			calls.map((r) => [r.request, r.params]),
			[
				["parentToolStart", { callId: "t1", tool: "bash" }],
				["parentToolEnd", { callId: "t1" }],
				["parentToolStart", { callId: "t2", tool: "read" }],
			],
		);
		await pi.emit("session_shutdown", { reason: "quit" }, fakeCtx([]));
	} finally {
		delete process.env.FAKE_SLATE_LEASE;
	}
});

test("a coordinator that fails to start is named once; no Slate tool is offered and tool calls are not blocked", async () => {
	process.env.FAKE_SLATE_SERVE_FAIL = "1";
	try {
		const pi = start();
		const notices: Notice[] = [];
		await started(pi, notices);
		assert.deepEqual([...pi.tools.keys()], []);
		assert.equal(notices.length, 1);
		assert.equal(notices[0].level, "error");
		assert.match(notices[0].text, /Slate could not start its coordinator: .*exited \(code 2\).*not a UUID/s);
		assert.equal(await pi.emit("tool_call", { toolName: "bash", toolCallId: "t", input: {} }), undefined);
	} finally {
		delete process.env.FAKE_SLATE_SERVE_FAIL;
	}
});

test("/subagent-status runs `slate status --parent <session>` and shows its text", async () => {
	writeFileSync(logFile, "");
	const pi = start();
	const notices: Notice[] = [];
	await pi.emit("session_start", { reason: "startup" }, fakeCtx(notices));
	await pi.command("subagent-status").handler("", fakeCtx(notices));
	await pi.command("subagent-status").handler("0b6a0000-0000-4000-8000-00000000000a 1", fakeCtx(notices));
	assert.deepEqual(notices, [
		{ text: `ran status --parent ${SESSION_ID}`, level: "info" },
		{ text: `ran status --parent ${SESSION_ID} -- 0b6a0000-0000-4000-8000-00000000000a 1`, level: "info" },
	]);
	process.env.FAKE_SLATE_FAIL = "1";
	try {
		await pi.command("subagent-status").handler("", fakeCtx(notices));
		assert.equal(notices.at(-1)?.level, "error");
	} finally {
		delete process.env.FAKE_SLATE_FAIL;
	}
	await pi.command("subagent-profiles").handler("", fakeCtx(notices));
	assert.deepEqual(notices.at(-1), { text: "ran profiles --text", level: "info" });
	// pi's registry goes to the coordinator first; the CLI then answers for this session.
	const modelRegistry = { getAll: () => [{ provider: "fake", id: "fake-model" }], hasConfiguredAuth: () => true };
	await pi.command("slate").handler("effective", { ...fakeCtx(notices), modelRegistry } as never);
	assert.deepEqual(notices.at(-1), { text: `ran effective --parent ${SESSION_ID}`, level: "info" });
	await pi.command("slate").handler("bogus", fakeCtx(notices));
	assert.deepEqual(notices.at(-1), {
		text: "/slate bogus: unknown subcommand; expected effective, handoff or resume",
		level: "error",
	});
	await pi.emit("session_shutdown", { reason: "quit" }, fakeCtx(notices));
});

test("/subagent-hub opens the overlay on the session's socket (in pi's terminal only); --pane asks the CLI", async () => {
	writeFileSync(logFile, "");
	const pi = start();
	const notices: Notice[] = [];
	await pi.emit("session_start", { reason: "startup" }, fakeCtx(notices));
	hubsOpened.length = 0;
	await pi.command("subagent-hub").handler("", { ...fakeCtx(notices), mode: "tui" });
	assert.equal(hubsOpened.length, 1);
	assert.equal(hubsOpened[0]?.slate, slate);
	assert.match(hubsOpened[0]?.socket ?? "", /^\/.+/);
	await pi.command("subagent-hub").handler("", { ...fakeCtx(notices), mode: "rpc" });
	assert.equal(hubsOpened.length, 1, "no overlay outside pi's terminal");
	assert.equal(notices.at(-1)?.level, "error");
	await pi.command("subagent-hub").handler("--pane", fakeCtx(notices));
	assert.ok(log().some((r) => r.argv?.join(" ") === `hub --parent ${SESSION_ID} --pane`));
	await pi.emit("session_shutdown", { reason: "quit" }, fakeCtx(notices));
});

test("with a UI, the widget is a component asking `slate watch --lines` for pi's width, and goes with the rows", async () => {
	const pi = start();
	const widgets: unknown[] = [];
	await pi.emit("session_start", { reason: "startup" }, fakeCtx([], widgets, true));
	await pi.emit("before_agent_start", { systemPrompt: "" }); // started
	await until(() => widgets.length >= 1);
	const factory = widgets[0] as WidgetFactory;
	assert.equal(typeof factory, "function");
	let renders = 0;
	const component = factory({ requestRender: () => renders++, terminal: { rows: 45 } });
	// Drawn for 100 columns, shown at once inside 160 (they fit), and 158 asked for once.
	assert.deepEqual(component.render(160), [" ● scout 0b6a…@1 running 1s"]);
	component.render(160);
	await until(() => renders >= 1);
	const requests = () => log().filter((r) => r.watchRequest !== undefined).map((r) => r.watchRequest);
	assert.deepEqual(requests(), [{ width: 158, rows: 45 }]);
	assert.deepEqual(component.render(160), [" ● scout 0b6a…@1 running 1s"]);
	// Narrower than the row: the fake answers no rows, and the widget is removed.
	component.render(20);
	await until(() => widgets.length >= 2);
	assert.equal(widgets[1], undefined);
	assert.deepEqual(requests().at(-1), { width: 18, rows: 45 });
	const watch = log().filter((r) => r.argv?.[0] === "watch").at(-1);
	assert.deepEqual(watch?.argv, ["watch", "--parent", SESSION_ID, "--lines"]);
	await pi.emit("session_shutdown", { reason: "quit" }, fakeCtx([]));
});
