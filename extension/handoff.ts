/**
 * `/slate handoff [--track-boundary|--post-check|--context-budget|--user-request] [focus]` and
 * `/slate resume [--model provider/id] [--effort LEVEL]` inside pi (spec 000, "Fresh-session
 * entry"; docs/handoff.md). Slate's CLI applies every rule; pi does the switching:
 *
 * 1. wait until the agent is idle (an idle-wait failure leaves nothing written);
 * 2. run `slate --json handoff --from-pi --parent P --session <this file> <args>` (or `resume`):
 *    `--from-pi` tells the CLI that its parent process is the pi that owns the session (idle
 *    now, and about to let go of it), and that the kickoff is claimed but sent by pi;
 * 3. switch pi to the successor (resume: re-open this session, which now holds the records the
 *    CLI appended) with `ctx.switchSession(path)`; the old runtime shuts down first;
 * 4. in the successor's context, send the claimed kickoff as the hidden `slate-kickoff` custom
 *    message that starts a turn. A send that fails is reported there; the kickoff is never
 *    replayed (ask for continuation manually).
 */
import type { ExtensionCommandContext } from "@earendil-works/pi-coding-agent";

import { cliText } from "./cli.ts";
import type { SessionLookup } from "./commands.ts";
import { words } from "./commands.ts";

export const KICKOFF_TYPE = "slate-kickoff";

/** The successor's context that `switchSession`'s `withSession` receives (not exported by pi). */
type ReplacedSessionContext = Parameters<
	NonNullable<NonNullable<Parameters<ExtensionCommandContext["switchSession"]>[1]>["withSession"]>
>[0];

/** The claimed kickoff the CLI left for pi to send (`--from-pi`). */
export interface ClaimedKickoff {
	id: string;
	text: string;
}

/** The parts of `slate --json handoff` the extension reads. */
export interface HandoffJson {
	successorSessionId: string;
	successorFile: string;
	purpose: string;
	adoption: { status: string; kickoff: string; pauseReason?: string; error?: string };
	claimedKickoff?: ClaimedKickoff;
}

/** The parts of `slate --json resume` the extension reads. */
export interface ResumeJson {
	sessionFile: string;
	pauseReason: string;
	kickoff: string;
	claimedKickoff?: ClaimedKickoff;
}

/** `{"error", "problems"}`: a refusal, as text. */
export function errorText(value: unknown): string | undefined {
	if (typeof value !== "object" || value === null || typeof (value as { error?: unknown }).error !== "string") {
		return undefined;
	}
	const { error, problems } = value as { error: string; problems?: { path?: string; value?: string; rule?: string }[] };
	const lines = [error];
	for (const p of problems ?? []) {
		lines.push(`  ${p.path ?? "?"}${p.value === undefined ? "" : ` = ${p.value}`}: ${p.rule ?? ""}`);
	}
	return lines.join("\n");
}

export function handoffArgv(sub: "handoff" | "resume", args: string, parentId: string, sessionFile: string): string[] {
	const common = ["--json", sub, "--from-pi", "--session", sessionFile];
	return sub === "handoff" ? [...common, "--parent", parentId, ...words(args)] : [...common, ...words(args)];
}

/** Send the claimed kickoff in the successor, reporting there how it went. */
export async function sendKickoff(
	ctx: Pick<ReplacedSessionContext, "sendMessage" | "ui">,
	kickoff: ClaimedKickoff | undefined,
	done: string,
): Promise<void> {
	if (kickoff === undefined) {
		ctx.ui.notify(done, "info");
		return;
	}
	try {
		await ctx.sendMessage(
			{ customType: KICKOFF_TYPE, content: kickoff.text, display: false, details: { kickoffId: kickoff.id } },
			{ triggerTurn: true },
		);
		ctx.ui.notify(done, "info");
	} catch (error) {
		ctx.ui.notify(
			`${done}\nThe kickoff was claimed but could not be sent (${(error as Error).message}); it is never replayed — ask for continuation manually.`,
			"error",
		);
	}
}

function parseJson(stdout: string): unknown {
	try {
		return JSON.parse(stdout);
	} catch {
		return undefined;
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
		const run = await found.run(handoffArgv(sub, args, found.parentId, sessionFile), ctx.cwd);
		const json = parseJson(run.stdout);
		const refused = errorText(json);
		if (run.code !== 0 && (refused !== undefined || json === undefined)) {
			ctx.ui.notify(refused ?? cliText(run), "error");
			return;
		}
		if (sub === "handoff") {
			const report = json as HandoffJson;
			const done =
				`Handed off to session ${report.successorSessionId} (${report.purpose}); ` +
				`adoption ${report.adoption.status}` +
				(report.adoption.pauseReason === undefined ? "" : ` (${report.adoption.pauseReason}: choose a permitted model, then /slate resume)`) +
				(report.adoption.error === undefined ? "" : `\n${report.adoption.error}`);
			const kickoff = report.claimedKickoff;
			await ctx.switchSession(report.successorFile, {
				withSession: (next) => sendKickoff(next, kickoff, done),
			});
			return;
		}
		const report = json as ResumeJson;
		const done = `Pause cleared (${report.pauseReason}); kickoff ${report.kickoff}`;
		const kickoff = report.claimedKickoff;
		// Re-open the session: the records the CLI appended become pi's branch.
		await ctx.switchSession(report.sessionFile, {
			withSession: (next) => sendKickoff(next, kickoff, done),
		});
	};
}
