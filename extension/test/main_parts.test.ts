/**
 * The main session's parts one by one: argument parsing of the commands, the Hub plan,
 * install.json, `serve`'s lines, the widget rows and the handoff driver (the tools
 * are the coordinator's: tools.test.ts drives their transport).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { ControlClient } from "../control.ts";
import { hubPlan, shellQuote, statusArgv, steerArgv, stopArgv, slateSubcommand } from "../commands.ts";
import { parseServed, serveArgs } from "../coordinator.ts";
import { errorText, handoffArgv, registerHandoff } from "../handoff.ts";
import { findInstallation } from "../install.ts";
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

test("/subagent-hub: a tmux pane inside tmux, otherwise the exact command", () => {
	assert.deepEqual(hubPlan({ TMUX: "/tmp/tmux-1/default,1,0" }, "/opt/slate bin/slate", P, "/w"), {
		tmux: ["split-window", "-h", "-c", "/w", `'/opt/slate bin/slate' hub --parent ${P}`],
	});
	assert.deepEqual(hubPlan({}, "/usr/bin/slate", P, "/it's"), {
		show: `Open the Subagent Hub for this session in another terminal:\n  cd '/it'\\''s' && /usr/bin/slate hub --parent ${P}`,
	});
	assert.equal(shellQuote("a'b"), `'a'\\''b'`);
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
