/**
 * `/slate handoff [--track-boundary|--post-check|--context-budget|--user-request] [focus]` and
 * `/slate resume [--model provider/id] [--effort LEVEL]` inside pi (spec 000, "Fresh-session
 * entry"; docs/handoff.md). Slate's CLI applies every rule and words every outcome; pi does the
 * switching and shows what the CLI said:
 *
 * 1. wait until the agent is idle (an idle-wait failure leaves nothing written);
 * 2. handoff only: ask `slate --json handoff --check` whether a successor would adopt this
 *    session's model; when it would not, show why and the `slate.json` fix, and ask before
 *    handing off (the successor would pause);
 * 3. run `slate --json handoff --from-pi --parent P --session <this file> <args>` (or
 *    `resume`): `--from-pi` tells the CLI that its parent process is the pi that owns the
 *    session (idle now, and about to let go of it), and that the kickoff is claimed but sent by
 *    pi;
 * 4. read the answer strictly ({@link readAnswer}, the shapes of docs/handoff.schema.json): a
 *    refusal (`{"error": {code, message, data}}`) or anything unreadable is shown as an error
 *    in this session and nothing switches — pi is never asked to open a path the CLI did not
 *    give;
 * 5. switch pi to the successor (resume: re-open this session, which now holds the records the
 *    CLI appended) with `ctx.switchSession(path)`; the old runtime shuts down first;
 * 6. in the session the user now looks at, show the CLI's `notice` as the visible
 *    `slate-notice` message (kept out of the model's context, see {@link registerHandoffMessages}),
 *    then send the claimed kickoff as the `slate-kickoff` message that starts a turn. A send
 *    that fails is reported there; the kickoff is never replayed.
 *
 * pi does not restore a session's recorded model when the session holds no message yet (a
 * fresh successor), so {@link restoreRecordedModel} applies the model Slate recorded at a
 * resume or adoption when such a session starts.
 */
import { existsSync } from "node:fs";

import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@earendil-works/pi-coding-agent";

import { type CliRun, cliText, withoutErrorPrefix } from "./cli.ts";
import type { SessionLookup } from "./commands.ts";
import { words } from "./commands.ts";

export const KICKOFF_TYPE = "slate-kickoff";
/** Slate's visible outcome messages (handoff, resume): shown, never sent to the model. */
export const NOTICE_TYPE = "slate-notice";

/** The successor's context that `switchSession`'s `withSession` receives (not exported by pi). */
type ReplacedSessionContext = Parameters<
	NonNullable<NonNullable<Parameters<ExtensionCommandContext["switchSession"]>[1]>["withSession"]>
>[0];

/** The claimed kickoff the CLI left for pi to send (`--from-pi`). */
export interface ClaimedKickoff {
	id: string;
	text: string;
}

/** The parts of `slate --json handoff` the extension reads (`HandoffReport` in the schema). */
export interface HandoffJson {
	successorSessionId: string;
	successorFile: string;
	notice: string;
	adoption: { status: string; kickoff: string; pauseReason?: string };
	claimedKickoff?: ClaimedKickoff;
}

/** The parts of `slate --json resume` the extension reads (`ResumeReport` in the schema). */
export interface ResumeJson {
	sessionFile: string;
	notice: string;
	kickoff: string;
	model?: string;
	claimedKickoff?: ClaimedKickoff;
}

/** The parts of `slate --json handoff --check` the extension reads (`AdoptionCheck`). */
export interface CheckJson {
	permitted: boolean;
	notice: string;
}

/**
 * The required fields each report must carry, by schema definition name; the node test holds
 * them to docs/handoff.schema.json (each is a required property there).
 */
export const READ_FIELDS = {
	HandoffReport: ["successorSessionId", "successorFile", "notice", "adoption"],
	AdoptionReport: ["status", "kickoff"],
	ResumeReport: ["sessionFile", "notice", "kickoff"],
	AdoptionCheck: ["permitted", "notice"],
	CliError: ["code", "message"],
} as const;

/** What one CLI run answered. */
export type Answer =
	| { kind: "handoff"; report: HandoffJson }
	| { kind: "resume"; report: ResumeJson }
	| { kind: "check"; report: CheckJson }
	/** `{"error": {code, message, data}}`, worded for the user. */
	| { kind: "refused"; code: string; text: string }
	/** Anything else (a usage error from the argument parser, a crash): its own text. */
	| { kind: "unreadable"; text: string };

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function str(value: unknown): value is string {
	return typeof value === "string";
}

function optionalStr(value: unknown): boolean {
	return value === undefined || typeof value === "string";
}

function claimed(value: unknown): value is ClaimedKickoff | undefined {
	return value === undefined || (isObject(value) && str(value.id) && str(value.text));
}

function parseJson(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}

/** A refusal's words: the CLI's message, then each problem (`path = value: rule`). */
function refusalText(error: Json): string {
	const lines = [String(error.message)];
	if (Array.isArray(error.data)) {
		for (const p of error.data) {
			if (isObject(p) && str(p.rule)) {
				const where = [str(p.file) ? p.file : undefined, str(p.path) ? p.path : undefined].filter((x) => x !== undefined).join(" ");
				lines.push(`  - ${where}${str(p.value) ? ` = ${p.value}` : ""}: ${p.rule}`);
			} else {
				lines.push(`  - ${JSON.stringify(p)}`);
			}
		}
	} else if (error.data !== undefined && error.data !== null) {
		lines.push(`  ${JSON.stringify(error.data)}`);
	}
	return lines.join("\n");
}

/**
 * Read one run of `slate --json handoff|resume|handoff --check`. Never throws: every shape that
 * is not the expected report is a refusal (the CLI's error object) or unreadable (shown as the
 * CLI printed it).
 */
export function readAnswer(sub: "handoff" | "resume" | "check", run: CliRun): Answer {
	const json = parseJson(run.stdout);
	if (isObject(json) && isObject(json.error) && str(json.error.code) && str(json.error.message)) {
		return { kind: "refused", code: json.error.code, text: refusalText(json.error) };
	}
	const unreadable = (): Answer => ({ kind: "unreadable", text: withoutErrorPrefix(cliText(run)) });
	if (!isObject(json)) {
		return unreadable();
	}
	switch (sub) {
		case "check":
			return typeof json.permitted === "boolean" && str(json.notice)
				? { kind: "check", report: { permitted: json.permitted, notice: json.notice } }
				: unreadable();
		case "handoff": {
			const a = json.adoption;
			if (
				str(json.successorSessionId) &&
				str(json.successorFile) &&
				str(json.notice) &&
				isObject(a) &&
				str(a.status) &&
				str(a.kickoff) &&
				optionalStr(a.pauseReason) &&
				claimed(json.claimedKickoff)
			) {
				return { kind: "handoff", report: json as unknown as HandoffJson };
			}
			return unreadable();
		}
		case "resume":
			if (str(json.sessionFile) && str(json.notice) && str(json.kickoff) && optionalStr(json.model) && claimed(json.claimedKickoff)) {
				return { kind: "resume", report: json as unknown as ResumeJson };
			}
			return unreadable();
	}
}

export function handoffArgv(sub: "handoff" | "resume", args: string, parentId: string, sessionFile: string): string[] {
	const common = ["--json", sub, "--from-pi", "--session", sessionFile];
	return sub === "handoff" ? [...common, "--parent", parentId, ...words(args)] : [...common, ...words(args)];
}

export function checkArgv(sessionFile: string): string[] {
	return ["--json", "handoff", "--check", "--from-pi", "--session", sessionFile];
}

/** The visible outcome in the session the user looks at (never sent to the model). */
export async function showNotice(ctx: Pick<ReplacedSessionContext, "sendMessage" | "ui">, text: string, details: unknown): Promise<void> {
	try {
		await ctx.sendMessage({ customType: NOTICE_TYPE, content: text, display: true, details });
	} catch (error) {
		ctx.ui.notify(`${text}\n(${(error as Error).message})`, "warning");
	}
}

/** Send the claimed kickoff in the successor, reporting there when it could not be sent. */
export async function sendKickoff(ctx: Pick<ReplacedSessionContext, "sendMessage" | "ui">, kickoff: ClaimedKickoff | undefined): Promise<void> {
	if (kickoff === undefined) {
		return;
	}
	try {
		await ctx.sendMessage(
			{ customType: KICKOFF_TYPE, content: kickoff.text, display: false, details: { kickoffId: kickoff.id } },
			{ triggerTurn: true },
		);
	} catch (error) {
		ctx.ui.notify(
			`The kickoff was claimed but could not be sent (${(error as Error).message}); it is never replayed — ask for continuation manually.`,
			"error",
		);
	}
}

/** `provider/id` of pi's current model, if any. */
function modelName(ctx: Pick<ExtensionContext, "model">): string | undefined {
	return ctx.model === undefined ? undefined : `${ctx.model.provider}/${ctx.model.id}`;
}

/** Switch to `file` and show `notice` there, then send the kickoff. */
async function switchAndShow(
	ctx: ExtensionCommandContext,
	file: string,
	notice: string,
	details: unknown,
	kickoff: ClaimedKickoff | undefined,
	expectModel: string | undefined,
): Promise<void> {
	if (!existsSync(file)) {
		ctx.ui.notify(`Slate reported session file ${file}, which does not exist; pi stays in this session.\n${notice}`, "error");
		return;
	}
	const result = await ctx.switchSession(file, {
		withSession: async (next) => {
			let text = notice;
			const now = modelName(next);
			if (expectModel !== undefined && now !== expectModel) {
				text += `\nWarning: pi is on ${now ?? "no model"}, not ${expectModel}: pi's registry or credentials lack it (choose one with /model).`;
			}
			await showNotice(next, text, details);
			await sendKickoff(next, kickoff);
		},
	});
	if (result.cancelled) {
		ctx.ui.notify(`Another extension cancelled the switch; pi stays in this session.\n${notice}`, "warning");
	}
}

/** The `/slate handoff` and `/slate resume` handler. */
export function registerHandoff(
	session: SessionLookup,
): (sub: "handoff" | "resume", args: string, ctx: ExtensionCommandContext) => Promise<void> {
	return async (sub, args, ctx) => {
		const found = await session();
		if (!found.ok) {
			ctx.ui.notify(`Slate is not running in this session: ${found.reason}`, "error");
			return;
		}
		const sessionFile = ctx.sessionManager.getSessionFile();
		if (sessionFile === undefined || sessionFile === "") {
			ctx.ui.notify(`/slate ${sub}: this pi session is not saved to a file, so there is nothing to hand off`, "error");
			return;
		}
		try {
			await ctx.waitForIdle();
		} catch (error) {
			ctx.ui.notify(`/slate ${sub}: the agent did not become idle (${(error as Error).message}); nothing was written`, "error");
			return;
		}
		if (sub === "handoff") {
			const check = readAnswer("check", await found.run(checkArgv(sessionFile), ctx.cwd));
			if (check.kind === "check" && !check.report.permitted) {
				const go = !ctx.hasUI || (await ctx.ui.confirm("Slate handoff: the successor would pause", `${check.report.notice}\n\nHand off anyway?`));
				if (!go) {
					ctx.ui.notify(`${check.report.notice}\nNo handoff: nothing was written.`, "warning");
					return;
				}
			}
		}
		const answer = readAnswer(sub, await found.run(handoffArgv(sub, args, found.parentId, sessionFile), ctx.cwd));
		switch (answer.kind) {
			case "refused":
			case "unreadable":
				ctx.ui.notify(`/slate ${sub}: ${answer.text}`, "error");
				return;
			case "handoff": {
				const r = answer.report;
				await switchAndShow(ctx, r.successorFile, r.notice, { outcome: "handoff", adoption: r.adoption.status }, r.claimedKickoff, undefined);
				return;
			}
			case "resume": {
				const r = answer.report;
				await switchAndShow(ctx, r.sessionFile, r.notice, { outcome: "resume" }, r.claimedKickoff, r.model);
				return;
			}
			case "check":
				return;
		}
	};
}

/** A session entry as the branch holds it (the fields read here). */
interface BranchEntry {
	type: string;
	customType?: string;
	data?: unknown;
	provider?: string;
	modelId?: string;
	thinkingLevel?: string;
}

/**
 * The model Slate recorded at a resume or adoption (the `model_change` the CLI wrote before the
 * newest unpaused `slate-state`), when the session has held no message since: pi restores a
 * session's model only when the session holds messages, so a fresh successor would otherwise
 * stay on pi's default — the very model the pause refused.
 */
export function recordedModel(branch: readonly BranchEntry[]): { provider: string; modelId: string; thinkingLevel?: string } | undefined {
	let state = -1;
	for (let i = branch.length - 1; i >= 0; i--) {
		const e = branch[i];
		if (e.type === "custom" && e.customType === "slate-state") {
			state = i;
			break;
		}
	}
	if (state < 0) {
		return undefined;
	}
	const data = branch[state].data;
	if (!isObject(data) || data.paused !== false) {
		return undefined;
	}
	if (branch.slice(state + 1).some((e) => e.type === "message" || e.type === "custom_message")) {
		return undefined;
	}
	let model: { provider: string; modelId: string; thinkingLevel?: string } | undefined;
	let level: string | undefined;
	for (let i = state - 1; i >= 0 && (model === undefined || level === undefined); i--) {
		const e = branch[i];
		if (model === undefined && e.type === "model_change" && str(e.provider) && str(e.modelId)) {
			model = { provider: e.provider, modelId: e.modelId };
		}
		if (level === undefined && e.type === "thinking_level_change" && str(e.thinkingLevel)) {
			level = e.thinkingLevel;
		}
	}
	return model === undefined ? undefined : level === undefined ? model : { ...model, thinkingLevel: level };
}

/** At `session_start`: put pi on the model Slate recorded (see {@link recordedModel}). */
export async function restoreRecordedModel(pi: Pick<ExtensionAPI, "setModel" | "setThinkingLevel">, ctx: ExtensionContext): Promise<void> {
	const recorded = recordedModel(ctx.sessionManager.getBranch() as readonly BranchEntry[]);
	if (recorded === undefined) {
		return;
	}
	if (ctx.model?.provider !== recorded.provider || ctx.model?.id !== recorded.modelId) {
		const model = ctx.modelRegistry.find(recorded.provider, recorded.modelId);
		if (model === undefined || !(await pi.setModel(model))) {
			return; // The notice of the resume says which model pi is on instead.
		}
	}
	if (recorded.thinkingLevel !== undefined) {
		pi.setThinkingLevel(recorded.thinkingLevel as Parameters<ExtensionAPI["setThinkingLevel"]>[0]);
	}
}

/**
 * The main session's half of handoff and resume outside the command: a session that starts
 * gets the model Slate recorded, and Slate's notices are for the person — they are dropped
 * from what the model is sent.
 */
export function registerHandoffMessages(pi: ExtensionAPI): void {
	pi.on("session_start", (_event, ctx) => restoreRecordedModel(pi, ctx));
	// Plain text, as Slate worded it (pi's default would read it as Markdown).
	pi.registerMessageRenderer(NOTICE_TYPE, (message, _options, theme) => {
		const text = typeof message.content === "string" ? message.content : "";
		return {
			render: (width: number) => [theme.fg("accent", " Slate"), ...wrapLines(text, width).map((l) => theme.fg("muted", l))],
			invalidate: () => {},
		};
	});
	pi.on("context", (event) => {
		const kept = event.messages.filter((m) => !(m.role === "custom" && (m as { customType?: string }).customType === NOTICE_TYPE));
		return kept.length === event.messages.length ? undefined : { messages: kept };
	});
}

/**
 * `text` as lines of at most `width` columns, one column of padding on each side: broken at
 * spaces, a longer word hard-broken; continuation lines keep the line's indentation. Slate's
 * notices are sanitized, single-width text.
 */
export function wrapLines(text: string, width: number): string[] {
	const room = Math.max(8, width - 2);
	const out: string[] = [];
	for (const line of text.split("\n")) {
		const indent = /^ */.exec(line)?.[0] ?? "";
		let rest = [...line];
		let first = true;
		while (rest.length > 0 || first) {
			const pad = first ? [] : [...indent, " ", " "];
			const avail = Math.max(4, room - pad.length);
			if (rest.length <= avail) {
				out.push(` ${[...pad, ...rest].join("")}`);
				break;
			}
			let cut = rest.lastIndexOf(" ", avail);
			if (cut <= indent.length) {
				cut = avail;
			}
			out.push(` ${[...pad, ...rest.slice(0, cut)].join("").trimEnd()}`);
			rest = rest.slice(cut);
			while (rest[0] === " ") {
				rest = rest.slice(1);
			}
			first = false;
		}
	}
	return out;
}
