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
import { fileURLToPath } from "node:url";

import { ControlClient } from "../control.ts";
import { effectiveArgv, hostModels, hubArgv, showRunWithWarning, statusArgv, steerArgv, stopArgv, slateSubcommand, targetCompletions } from "../commands.ts";
import { parseServed, serveArgs } from "../coordinator.ts";
import { handoffArgv, recordedModel, registerHandoff, wrapLines } from "../handoff.ts";
import { findInstallation } from "../install.ts";
import { pathLines } from "../render.ts";
import type { TargetRow } from "../protocol.ts";
import { frame, parseRows, rowsWidth, sizeRequest, watchArgs } from "../widget.ts";
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

test("Tab completes a command's target to the full identity from `targets`; only the first word", () => {
	const targets: TargetRow[] = [
		{ target: `${ID}@1`, handle: "0b6a0000", role: "scout", status: "running", headline: "survey" },
		{ target: "7c1d0000-0000-4000-8000-00000000000b@2", handle: "7c1d0000@2", role: "review", status: "settled", headline: "check" },
	];
	const first = { value: `${ID}@1 `, label: "0b6a0000  scout  running", description: "survey" };
	const second = {
		value: "7c1d0000-0000-4000-8000-00000000000b@2 ",
		label: "7c1d0000@2  review  settled",
		description: "check",
	};
	assert.deepEqual(targetCompletions("", targets), [first, second]);
	assert.deepEqual(targetCompletions("0b6a", targets), [first]);
	assert.deepEqual(targetCompletions("7c1d0000@", targets), [second]);
	assert.deepEqual(targetCompletions(`${ID}@`, targets), [first]);
	// Nothing matches, or the target is followed by more: no completion.
	assert.equal(targetCompletions("ffff", targets), null);
	assert.equal(targetCompletions(`${ID}@1 look`, targets), null);
	assert.equal(targetCompletions("0b6a0000 ", targets), null);
	assert.equal(targetCompletions("", []), null);
});

test("/subagent-status, -stop and -steer build the CLI's argv; bad arity shows the usage", () => {
	assert.deepEqual(statusArgv("  ", P), { ok: true, argv: ["status", "--parent", P] });
	assert.deepEqual(statusArgv(`${ID} 2`, P), { ok: true, argv: ["status", "--parent", P, "--", ID, "2"] });
	assert.deepEqual(statusArgv("a b c", P), { ok: false, usage: "usage: /subagent-status [id generation]" });
	assert.deepEqual(statusArgv("", P, 80), { ok: true, argv: ["status", "--parent", P, "--width", "78"] });
	assert.deepEqual(statusArgv("", P, 30), { ok: true, argv: ["status", "--parent", P, "--width", "56"] });
	assert.deepEqual(statusArgv(`${ID} 2`, P, 80), { ok: true, argv: ["status", "--parent", P, "--", ID, "2"] });
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

test("widget rows: one JSON document each; anything else is not rows", () => {
	assert.deepEqual(watchArgs(P), ["watch", "--parent", P, "--lines"]);
	assert.deepEqual(parseRows('{"width":80,"lines":["a","b"]}'), { width: 80, lines: ["a", "b"], final: false });
	assert.deepEqual(parseRows('{"width":80,"lines":[]}'), { width: 80, lines: [], final: false });
	// A dead coordinator's last document keeps the widget (issue 14, item 4).
	assert.equal(
		parseRows('{"width":9,"lines":["⚠ coordinator died"],"coordinator":{"state":"died","lastSignOfLife":1}}')?.final,
		true,
	);
	for (const bad of ["", "x", '{"width":80,"lines":[1]}', '{"lines":["a"]}', '{"width":0,"lines":[]}', '{"width":1.5,"lines":[]}', '{"rows":[]}', "[]"]) {
		assert.equal(parseRows(bad), undefined, bad);
	}
});

test("widget size: pi's width less one column each side, asked for with the terminal's height", () => {
	assert.equal(rowsWidth(160), 158);
	assert.equal(rowsWidth(2), 1);
	assert.equal(rowsWidth(5000), 1000);
	assert.equal(sizeRequest(158, 45), '{"width":158,"rows":45}\n');
	assert.equal(sizeRequest(78, undefined), '{"width":78}\n');
	assert.equal(sizeRequest(78, 0), '{"width":78}\n');
});

test("widget frame: rows drawn for this width or a narrower one are padded; wider ones are cut or hidden", () => {
	const rows = { width: 10, lines: ["\x1b[32m●\x1b[0m scout x", "b"], final: false };
	assert.deepEqual(frame(rows, 12, undefined), [" \x1b[32m●\x1b[0m scout x", " b"]);
	assert.deepEqual(frame(rows, 40, undefined), [" \x1b[32m●\x1b[0m scout x", " b"]);
	// Narrower than the rows: pi's own truncation cuts them to the inner width, or nothing shows.
	const cut = (line: string, width: number) => `${line}|${width}`;
	assert.deepEqual(frame(rows, 8, cut), [" \x1b[32m●\x1b[0m scout x|6", " b|6"]);
	assert.deepEqual(frame(rows, 8, undefined), []);
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
});

function handoffCtx(log: unknown[], answers: { code: number; stdout: string }[]) {
	const next = {
		model: { provider: "fake", id: "fake-model" },
		ui: { notify: (text: string, level: string) => log.push(["next.notify", level, text]) },
		sendMessage: async (message: unknown, options: unknown) => {
			log.push(["next.sendMessage", message, options]);
		},
	};
	const ctx = {
		cwd: "/w",
		hasUI: true,
		sessionManager: { getSessionFile: () => "/s/current.jsonl" },
		ui: {
			notify: (text: string, level: string) => log.push(["notify", level, text]),
			confirm: async (title: string) => {
				log.push(["confirm", title]);
				return false;
			},
		},
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
			return { ...(answers.shift() ?? { code: 0, stdout: "" }), stderr: "" };
		},
	});
	return { ctx, session };
}

const PERMITTED = { code: 0, stdout: JSON.stringify({ permitted: true, notice: "The current model fake/fake-model is permitted" }) };
/** A file that exists, standing in for the successor the CLI wrote. */
const EXISTING = fileURLToPath(import.meta.url);

test("/slate handoff: idle, the check, the CLI, then pi switches, shows Slate's notice and sends the claimed kickoff", async () => {
	const log: unknown[] = [];
	const report = {
		successorSessionId: "s2",
		successorFile: EXISTING,
		notice: "Slate handed off session s1 to this session s2 (track-boundary).",
		adoption: { status: "adopted", kickoff: "claimed" },
		claimedKickoff: { id: "k1", text: "Continue with the parser" },
	};
	const { ctx, session } = handoffCtx(log, [PERMITTED, { code: 0, stdout: JSON.stringify(report) }]);
	await registerHandoff(session)("handoff", "--track-boundary parser", ctx as never);
	assert.deepEqual(log, [
		["waitForIdle"],
		["run", ["--json", "handoff", "--check", "--from-pi", "--session", "/s/current.jsonl"]],
		["run", ["--json", "handoff", "--from-pi", "--session", "/s/current.jsonl", "--parent", P, "--track-boundary", "parser"]],
		["switchSession", EXISTING],
		[
			"next.sendMessage",
			{ customType: "slate-notice", content: report.notice, display: true, details: { outcome: "handoff", adoption: "adopted" } },
			undefined,
		],
		[
			"next.sendMessage",
			{ customType: "slate-kickoff", content: "Continue with the parser", display: false, details: { kickoffId: "k1" } },
			{ triggerTurn: true },
		],
	]);
});

test("/slate handoff on a model routing refuses: the check's words and a question; declined, nothing runs", async () => {
	const log: unknown[] = [];
	const check = { permitted: false, notice: "The current model fake/fake-model is not permitted by routing …\nFix: …" };
	const { ctx, session } = handoffCtx(log, [{ code: 0, stdout: JSON.stringify(check) }]);
	await registerHandoff(session)("handoff", "", ctx as never);
	assert.deepEqual(log.slice(2), [
		["confirm", "Slate handoff: the successor would pause"],
		["notify", "warning", `${check.notice}\nNo handoff: nothing was written.`],
	]);
});

test("/slate resume refused: the CLI's error object is shown once, pi stays in this session", async () => {
	const log: unknown[] = [];
	const refusal = {
		error: {
			code: "failed",
			message: "an adoption pause clears only with a permitted model and effort; the pause stays",
			data: [{ path: "--model", value: '"fake/fake-model"', rule: "is not an exact permission" }],
		},
	};
	const { ctx, session } = handoffCtx(log, [{ code: 1, stdout: JSON.stringify(refusal) }]);
	await registerHandoff(session)("resume", "", ctx as never);
	assert.deepEqual(log.slice(2), [
		[
			"notify",
			"error",
			'/slate resume: an adoption pause clears only with a permitted model and effort; the pause stays\n  - --model = "fake/fake-model": is not an exact permission',
		],
	]);
});

test("/slate resume: re-opens this session and says when pi is not on the model Slate recorded", async () => {
	const log: unknown[] = [];
	const report = { sessionFile: EXISTING, notice: "Slate resumed this session", kickoff: "none", model: "fake/fake-reasoner" };
	const { ctx, session } = handoffCtx(log, [{ code: 0, stdout: JSON.stringify(report) }]);
	await registerHandoff(session)("resume", "", ctx as never);
	assert.deepEqual(log.slice(2), [
		["switchSession", EXISTING],
		[
			"next.sendMessage",
			{
				customType: "slate-notice",
				content:
					"Slate resumed this session\nWarning: pi is on fake/fake-model, not fake/fake-reasoner: pi's registry or credentials lack it (choose one with /model).",
				display: true,
				details: { outcome: "resume" },
			},
			undefined,
		],
	]);
});

test("a report naming a session file that does not exist: no switch, an error", async () => {
	const log: unknown[] = [];
	const report = { sessionFile: "/nonexistent/s.jsonl", notice: "Slate resumed this session", kickoff: "none" };
	const { ctx, session } = handoffCtx(log, [{ code: 0, stdout: JSON.stringify(report) }]);
	await registerHandoff(session)("resume", "", ctx as never);
	assert.equal(log.length, 3);
	assert.deepEqual((log[2] as unknown[]).slice(0, 2), ["notify", "error"]);
});

test("the model Slate recorded: the model_change before the newest unpaused slate-state, until a message follows", () => {
	const state = (paused: boolean) => ({ type: "custom", customType: "slate-state", data: { paused } });
	const model = (modelId: string) => ({ type: "model_change", provider: "fake", modelId });
	const level = { type: "thinking_level_change", thinkingLevel: "off" };
	assert.deepEqual(recordedModel([model("a"), state(true), model("b"), level, state(false)]), {
		provider: "fake",
		modelId: "b",
		thinkingLevel: "off",
	});
	assert.equal(recordedModel([model("a"), state(true)]), undefined, "paused: pi stays where it is");
	assert.equal(recordedModel([model("a"), state(false), { type: "message" }]), undefined, "used since: pi's own restore");
	assert.equal(recordedModel([model("a")]), undefined, "no Slate state");
});

test("a notice wraps at spaces within the width, continuation lines indented under their line", () => {
	const lines = wrapLines("Slate handed off session a to b.\n  - one two three four five six seven\n/a/very/long/path/without/any/space/at/all", 20);
	assert.deepEqual(lines, [
		" Slate handed off",
		"   session a to b.",
		"   - one two three",
		"     four five six",
		"     seven",
		" /a/very/long/path/",
		"   without/any/spac",
		"   e/at/all",
	]);
	for (const l of lines) {
		assert.ok(l.length <= 20, l);
	}
});

test("/slate effective: pi's registry goes to Slate as facts, and Slate's warning is shown as a warning", () => {
	const models = [
		{ provider: "fake", id: "fake-model" },
		{ provider: "openai", id: "gpt-6-luna" },
	];
	const registry = {
		getAll: () => models,
		hasConfiguredAuth: (m: { provider: string }) => m.provider === "fake",
	};
	assert.deepEqual(hostModels(registry as never), [
		{ provider: "fake", id: "fake-model", credentials: true },
		{ provider: "openai", id: "gpt-6-luna", credentials: false },
	]);
	assert.deepEqual(effectiveArgv(" --recovery luna-6 ", "P"), ["effective", "--parent", "P", "--recovery", "luna-6"]);
	assert.deepEqual(effectiveArgv("", undefined), ["effective"]);
	const shown: [string, string][] = [];
	const ctx = { ui: { notify: (text: string, kind: string) => shown.push([kind, text]) } };
	showRunWithWarning(ctx as never, { code: 0, stdout: "Routing for /w\n", stderr: "routing: none of the 2 routes …\n" });
	assert.deepEqual(shown, [
		["info", "Routing for /w"],
		["warning", "routing: none of the 2 routes …"],
	]);
	shown.length = 0;
	showRunWithWarning(ctx as never, { code: 0, stdout: "Routing for /w\n", stderr: "" });
	assert.deepEqual(shown, [["info", "Routing for /w"]]);
	shown.length = 0;
	showRunWithWarning(ctx as never, { code: 3, stdout: "", stderr: "error: no coordinator\n" });
	assert.deepEqual(shown, [["error", "no coordinator"]]);
});

test("an artifact path that does not fit is continued after a `/`, never cut", () => {
	const path = "~/.pi/agent/sessions/--home-u-src-app--/delegation/01a2359e-7c44-72d9-bb5f-9ead7511340c/21681057-8fe0-44a0-b287-2e3343f12579/result.txt";
	for (const width of [20, 40, 80, 200]) {
		const lines = pathLines(path, "  → ", "    ", width);
		for (const l of lines) {
			assert.ok([...l].length <= width, `${width}: ${l}`);
		}
		assert.equal(lines.map((l, i) => l.slice(i === 0 ? 4 : 4)).join(""), path, `${width}: exact`);
		if (width >= 80) {
			assert.ok(lines.slice(0, -1).every((l) => l.endsWith("/")), `${width}: broken after a slash: ${lines.join("|")}`);
		}
	}
	assert.deepEqual(pathLines("out/result.txt", "  → ", "    ", 80), ["  → out/result.txt"]);
	// Narrower than a segment: the segment is split, still whole.
	assert.equal(pathLines("abcdefghij", "  → ", "    ", 6).map((l) => l.slice(4)).join(""), "abcdefghij");
});
