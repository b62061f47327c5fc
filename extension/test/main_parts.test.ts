/**
 * The main session's parts one by one: argument parsing of the commands, the Hub plan,
 * install.json, `serve`'s lines, the widget rows, the compatibility actions, the delivery's
 * matching and the handoff driver.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { ControlClient } from "../control.ts";
import { hubArgv, statusArgv, steerArgv, stopArgv, slateSubcommand } from "../commands.ts";
import { parseServed, serveArgs } from "../coordinator.ts";
import { OutcomeDelivery, outcomeMessage } from "../delivery.ts";
import { errorText, handoffArgv, registerHandoff } from "../handoff.ts";
import { findInstallation } from "../install.ts";
import { actionCall, compatChild, renewalMethod, runAction } from "../subagent.ts";
import { isFinal, parseRows, watchArgs } from "../widget.ts";
import { FakeCoordinator, type Handler } from "./fake_coordinator.ts";

const P = "6f1c0000-0000-4000-8000-0000000000aa";
const ID = "0b6a0000-0000-4000-8000-00000000000a";

let fake: FakeCoordinator;
let handler: Handler = () => ({ result: null });
let dir: string;

before(async () => {
	fake = await new FakeCoordinator((r) => handler(r)).listen();
	dir = mkdtempSync(join(tmpdir(), "slate-parts-"));
});
after(async () => {
	await fake.stop();
	rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// Commands

test("/subagent-status, -stop and -steer build the CLI's argv; bad arity shows the usage", () => {
	assert.deepEqual(statusArgv("  ", P), { ok: true, argv: ["status", "--parent", P] });
	assert.deepEqual(statusArgv(`${ID} 2`, P), { ok: true, argv: ["status", "--parent", P, "--", ID, "2"] });
	assert.deepEqual(statusArgv("a b c", P), { ok: false, usage: "usage: /subagent-status [id generation]" });
	assert.deepEqual(stopArgv(`${ID}@1`, P), { ok: true, argv: ["stop", "--parent", P, "--", `${ID}@1`] });
	assert.equal(stopArgv("", P).ok, false);
	assert.deepEqual(steerArgv(`${ID} 3 look at  -the tests`, P), {
		ok: true,
		argv: ["steer", "--parent", P, "--", `${ID}@3`, "look at  -the tests"],
	});
	assert.deepEqual(steerArgv(`${ID}@3 go`, P), { ok: true, argv: ["steer", "--parent", P, "--", `${ID}@3`, "go"] });
	for (const bad of ["", ID, `${ID} 3`, `${ID}@3   `]) {
		assert.equal(steerArgv(bad, P).ok, false, bad);
	}
});

test("/slate splits its subcommand from the rest", () => {
	assert.deepEqual(slateSubcommand(" handoff --post-check fix it"), { sub: "handoff", rest: "--post-check fix it" });
	assert.deepEqual(slateSubcommand(""), { sub: "", rest: "" });
});

test("/subagent-hub: the overlay, or --pane for the CLI's tmux pane; anything else is its usage", () => {
	assert.deepEqual(hubArgv("", P), { overlay: true });
	assert.deepEqual(hubArgv("  --pane ", P), { ok: true, argv: ["hub", "--parent", P, "--pane"] });
	assert.deepEqual(hubArgv("--pane extra", P), { ok: false, usage: "usage: /subagent-hub [--pane]" });
	assert.deepEqual(hubArgv("--frames", P), { ok: false, usage: "usage: /subagent-hub [--pane]" });
});

// ---------------------------------------------------------------------------------------------
// install.json

test("the binary: SLATE_BIN over install.json; the hash from install.json; problems named", () => {
	const d = mkdtempSync(join(dir, "inst-"));
	assert.match(
		(findInstallation({}, d) as { reason: string }).reason,
		/no .*install\.json and no SLATE_BIN: run `slate pi install`/,
	);
	assert.deepEqual(findInstallation({ SLATE_BIN: "/b/slate" }, d), { ok: true, installation: { slate: "/b/slate" } });
	assert.match((findInstallation({ SLATE_BIN: "slate" }, d) as { reason: string }).reason, /is not an absolute path/);
	writeFileSync(join(d, "install.json"), JSON.stringify({ slate: "/i/slate", extension: "ab12", version: "0.1.0" }));
	assert.deepEqual(findInstallation({}, d), { ok: true, installation: { slate: "/i/slate", extension: "ab12" } });
	assert.deepEqual(findInstallation({ SLATE_BIN: "/b/slate" }, d), {
		ok: true,
		installation: { slate: "/b/slate", extension: "ab12" },
	});
	writeFileSync(join(d, "install.json"), "{");
	assert.match((findInstallation({ SLATE_BIN: "/b/slate" }, d) as { reason: string }).reason, /install\.json: not JSON/);
	writeFileSync(join(d, "install.json"), JSON.stringify({ slate: "rel/slate" }));
	assert.match((findInstallation({}, d) as { reason: string }).reason, /slate must be the absolute path/);
});

// ---------------------------------------------------------------------------------------------
// serve and watch

test("serve's argv and first lines", () => {
	assert.deepEqual(serveArgs({ slate: "/s", sessionId: P, sessionDir: "/d", hostVersion: "1.6.0", cwd: "/w" }), [
		"serve",
		"--pi-session",
		P,
		"--session-dir",
		"/d",
		"--host-version",
		"1.6.0",
	]);
	assert.deepEqual(parseServed([`slate serve: parent ${P}`, "socket /run/s/x.sock", "events /d/events.jsonl"]), {
		ok: true,
		served: { parentId: P, socket: "/run/s/x.sock", events: "/d/events.jsonl" },
	});
	assert.equal(parseServed(["error: nope", "", ""]).ok, false);
});

test("widget rows: one JSON line each; anything else is not rows", () => {
	assert.deepEqual(watchArgs(P, 120), ["watch", "--parent", P, "--lines", "--width", "120"]);
	assert.deepEqual(watchArgs(P, undefined), ["watch", "--parent", P, "--lines"]);
	assert.deepEqual(parseRows('{"lines":["a","b"]}'), ["a", "b"]);
	assert.deepEqual(parseRows('{"lines":[]}'), []);
	// A dead coordinator's last document keeps the widget (issue 14, item 4).
	assert.equal(isFinal('{"lines":["⚠ coordinator died"],"coordinator":{"state":"died","lastSignOfLife":1}}'), true);
	assert.equal(isFinal('{"lines":["a"]}'), false);
	assert.equal(isFinal("not json"), false);
	for (const bad of ["", "x", '{"lines":[1]}', '{"rows":[]}', "[]"]) {
		assert.equal(parseRows(bad), undefined, bad);
	}
});

// ---------------------------------------------------------------------------------------------
// subagent actions

test("subagent actions: members checked with Slate's wording before anything is sent", () => {
	assert.deepEqual(actionCall({ action: "list" }), { ok: true, action: "list", id: undefined, message: undefined });
	assert.deepEqual(actionCall({ action: "stop", id: `${ID}@1` }), { ok: true, action: "stop", id: `${ID}@1`, message: undefined });
	assert.deepEqual(actionCall({ action: "steer", id: 5, message: " ", extra: 1 }), {
		ok: false,
		message:
			'subagent steer: $.extra: unknown property; allowed: action, id, message; $.id: required: the exact "UUID@generation"; $.message: required: non-whitespace text',
	});
	assert.deepEqual(actionCall({ action: "toString" }), {
		ok: false,
		message: 'subagent: $.action = "toString": must be one of agents, list, status, stop, steer, resume',
	});
	assert.equal(renewalMethod("paused"), "resume");
	assert.equal(renewalMethod("idle"), "followup");
	assert.equal(renewalMethod("parked"), "revive");
	assert.equal(renewalMethod("active"), "resume", "Slate refuses it in its own words");
	assert.deepEqual(compatChild({ id: ID, generation: 2, status: "queued" }), {
		id: `${ID}@2`,
		taskId: ID,
		generation: 2,
		status: "queued",
	});
});

test("subagent actions map to the root's methods; resume follows the presence and wakes once", async () => {
	const expected: [number, string][] = [];
	const services = {
		client: new ControlClient({ socket: fake.path, client: "test" }),
		delivery: { expect: (call: number, wake: string) => expected.push([call, wake]) },
	};
	const seen: [string, unknown][] = [];
	handler = (r) => {
		seen.push([r.method, r.params]);
		if (r.method === "status") {
			return { result: { snapshot: { id: ID, generation: 1 }, generations: [], agents: [{ id: ID, generation: 1, presence: "idle" }] } };
		}
		if (r.method === "followup") {
			return { result: { kind: "admitted", call: 12, children: [{ id: ID, generation: 2 }] } };
		}
		return { result: { kind: "ok" } };
	};
	const target = `${ID}@1`;
	await runAction(services, { ok: true, action: "agents" });
	await runAction(services, { ok: true, action: "status", id: target });
	await runAction(services, { ok: true, action: "stop", id: target });
	await runAction(services, { ok: true, action: "steer", id: target, message: "look" });
	const resumed = await runAction(services, { ok: true, action: "resume", id: target, message: "again" });
	assert.deepEqual(seen, [
		["agents", {}],
		["status", { target }],
		["stop", { target }],
		["steer", { target, text: "look" }],
		["status", { target }],
		["followup", { target, assignment: "again" }],
	]);
	assert.deepEqual(expected, [[12, "followUp"]]);
	assert.equal(JSON.parse(resumed.content[0].text)[0].id, `${ID}@2`);
	services.client.close();
});

// ---------------------------------------------------------------------------------------------
// Delivery

function outcomeEvent(call: number) {
	return { kind: "outcome", outcome: { call, request: 1, initiator: "root", delivery: "background", outcomes: [] }, preview: `p${call}` };
}

test("delivery: one message per expected call, early or late; others ignored; nothing after dispose", async () => {
	const sent: unknown[] = [];
	const delivery = new OutcomeDelivery({ socket: fake.path, client: "test" }, (message, options) =>
		sent.push([message.content, options]),
	);
	handler = (r) => (r.method === "subscribe" ? { result: { subscribed: true } } : { result: null });
	await delivery.start();
	const sub = fake.received.filter((r) => r.method === "subscribe").at(-1)?.connection ?? -1;
	fake.notify(sub, "event", outcomeEvent(1)); // arrives before its call is known
	fake.notify(sub, "event", outcomeEvent(99)); // not ours
	await new Promise((r) => setTimeout(r, 30));
	delivery.expect(1, "notify");
	delivery.expect(2, "followUp");
	fake.notify(sub, "event", outcomeEvent(2));
	fake.notify(sub, "event", outcomeEvent(2)); // a second outcome for the same call: not delivered
	fake.notify(sub, "lagged", { missed: 3 });
	await new Promise((r) => setTimeout(r, 30));
	assert.deepEqual(sent, [
		["p1", { triggerTurn: false }],
		["p2", { triggerTurn: true, deliverAs: "followUp" }],
	]);
	delivery.expect(3, "notify");
	delivery.dispose();
	fake.notify(sub, "event", outcomeEvent(3));
	await new Promise((r) => setTimeout(r, 30));
	assert.equal(sent.length, 2);
	await fake.until(() => fake.closed.includes(sub));
});

test("the outcome message: the preview as content, the full outcome as details", () => {
	const event = outcomeEvent(4) as Parameters<typeof outcomeMessage>[0];
	assert.deepEqual(outcomeMessage(event, "notify"), {
		message: { customType: "slate-window-outcome", content: "p4", display: true, details: event.outcome },
		options: { triggerTurn: false },
	});
});

// ---------------------------------------------------------------------------------------------
// Handoff

test("handoff argv: --json, --from-pi, this session, the parent (handoff only), the user's words", () => {
	assert.deepEqual(handoffArgv("handoff", "--post-check fix --user-request docs", P, "/s/f.jsonl"), [
		"--json",
		"handoff",
		"--from-pi",
		"--session",
		"/s/f.jsonl",
		"--parent",
		P,
		"--post-check",
		"fix",
		"--user-request",
		"docs",
	]);
	assert.deepEqual(handoffArgv("resume", "--model a/b", P, "/s/f.jsonl"), [
		"--json",
		"resume",
		"--from-pi",
		"--session",
		"/s/f.jsonl",
		"--model",
		"a/b",
	]);
	assert.equal(
		errorText({ error: "invalid --model/--effort; nothing was written", problems: [{ path: "--effort", value: '"HIGH"', rule: "must be one of …" }] }),
		'invalid --model/--effort; nothing was written\n  --effort = "HIGH": must be one of …',
	);
});

function handoffCtx(log: unknown[], stdoutFor: string, code = 0) {
	const next = {
		ui: { notify: (text: string, level: string) => log.push(["next.notify", level, text]) },
		sendMessage: async (message: unknown, options: unknown) => {
			log.push(["next.sendMessage", message, options]);
		},
	};
	const ctx = {
		cwd: "/w",
		sessionManager: { getSessionFile: () => "/s/current.jsonl" },
		ui: { notify: (text: string, level: string) => log.push(["notify", level, text]) },
		waitForIdle: async () => {
			log.push(["waitForIdle"]);
		},
		switchSession: async (path: string, options: { withSession: (c: unknown) => Promise<void> }) => {
			log.push(["switchSession", path]);
			await options.withSession(next);
			return { cancelled: false };
		},
	};
	const session = async () => ({
		ok: true as const,
		slate: "/s",
		parentId: P,
		run: async (argv: string[]) => {
			log.push(["run", argv]);
			return { code, stdout: stdoutFor, stderr: "" };
		},
	});
	return { ctx, session };
}

test("/slate handoff: idle first, then the CLI, then pi switches to the successor and sends the claimed kickoff", async () => {
	const log: unknown[] = [];
	const report = {
		successorSessionId: "s2",
		successorFile: "/s/successor.jsonl",
		purpose: "track-boundary",
		adoption: { status: "adopted", kickoff: "claimed" },
		claimedKickoff: { id: "k1", text: "Continue with the parser" },
	};
	const { ctx, session } = handoffCtx(log, JSON.stringify(report));
	await registerHandoff(session)("handoff", "--track-boundary parser", ctx as never);
	assert.deepEqual(log, [
		["waitForIdle"],
		["run", ["--json", "handoff", "--from-pi", "--session", "/s/current.jsonl", "--parent", P, "--track-boundary", "parser"]],
		["switchSession", "/s/successor.jsonl"],
		[
			"next.sendMessage",
			{ customType: "slate-kickoff", content: "Continue with the parser", display: false, details: { kickoffId: "k1" } },
			{ triggerTurn: true },
		],
		["next.notify", "info", "Handed off to session s2 (track-boundary); adoption adopted"],
	]);
});

test("/slate handoff refused: the CLI's error is shown and pi stays in this session", async () => {
	const log: unknown[] = [];
	const { ctx, session } = handoffCtx(log, JSON.stringify({ error: "session file … is open in a live pi process" }), 1);
	await registerHandoff(session)("handoff", "", ctx as never);
	assert.deepEqual(log.slice(2), [["notify", "error", "session file … is open in a live pi process"]]);
});

test("/slate resume: re-opens this session; no kickoff, no send", async () => {
	const log: unknown[] = [];
	const report = { sessionFile: "/s/current.jsonl", pauseReason: "context-budget", kickoff: "none" };
	const { ctx, session } = handoffCtx(log, JSON.stringify(report));
	await registerHandoff(session)("resume", "", ctx as never);
	assert.deepEqual(log.slice(2), [
		["switchSession", "/s/current.jsonl"],
		["next.notify", "info", "Pause cleared (context-budget); kickoff none"],
	]);
});
