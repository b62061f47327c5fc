/**
 * The extension in the user's own pi session (the main-session role): this pi session is the
 * parent runtime, and its coordinator lives and dies with it.
 *
 * - `session_start`: start (or attach to) `slate serve --pi-session <id>` for this session,
 *   connect as the operator, subscribe for background outcomes, and show the fleet widget.
 *   The start runs in the background; the tools and commands wait for it, and a failure is
 *   shown once and then answers every tool call with the reason.
 * - `session_shutdown` (quit, reload, new, resume, fork): deliver nothing more, `shutdown` the
 *   coordinator (it drains and stops its workers), close its stdin, wait for it to exit.
 * - The root tools, as the coordinator lists them (`delegate_task`, `delegate_coordinate`,
 *   `subagent`; tools.ts), registered once it has started and before the first run (the
 *   doctrine hook awaits the start), the parent mutation reservation, and the slash commands.
 *
 * The extension keeps no state that matters: every decision is the coordinator's.
 */
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { dirname } from "node:path";

import { cliRunner, type RunCli } from "./cli.ts";
import { registerCommands } from "./commands.ts";
import { registerHandoff, registerHandoffMessages } from "./handoff.ts";
import type { OpenHub } from "./hub_overlay.ts";
import { registerDoctrine, reportHostExtensions } from "./host_extensions.ts";
import type { InstallationResult } from "./install.ts";
import { registerReservation } from "./reservation.ts";
import { Runtime } from "./runtime.ts";
import { registerOutcomeRenderer, registerTools, type Send } from "./tools.ts";
import { FleetWidget, type Truncate } from "./widget.ts";

export interface MainSessionOptions {
	installation: InstallationResult;
	/** pi's version (`VERSION`), for the coordinator's host gate. */
	hostVersion: string;
	/** `hello.client`. */
	client: string;
	env: Record<string, string | undefined>;
	/** `/subagent-hub`'s overlay. */
	openHub: OpenHub;
}

type Started = { ok: true; runtime: Runtime } | { ok: false; reason: string };

/** The session directory pi uses for this session (the session file's directory). */
export function sessionDirOf(ctx: Pick<ExtensionContext, "sessionManager">): string | undefined {
	const file = ctx.sessionManager.getSessionFile();
	if (file !== undefined && file !== "") {
		return dirname(file);
	}
	const dir = ctx.sessionManager.getSessionDir();
	return dir === "" ? undefined : dir;
}

/** pi's own `truncateToWidth`, once loaded (inside pi; not when the module is absent). */
let truncate: Truncate | undefined;
void import("@earendil-works/pi-tui").then(
	(tui) => {
		truncate = (line, width) => tui.truncateToWidth(line, width);
	},
	() => {},
);

export function mainSession(pi: ExtensionAPI, options: MainSessionOptions): void {
	const { installation } = options;
	let started: Promise<Started> = Promise.resolve({ ok: false, reason: "the session has not started yet" });
	let widget: FleetWidget | undefined;
	/** The coordinator's `workerExtensions` line for this session's prompt, if any. */
	let doctrine: string | null = null;
	const run: RunCli | undefined = installation.ok ? cliRunner(installation.installation.slate) : undefined;

	const send: Send = (message, sendOptions) => pi.sendMessage(message, sendOptions);

	const runtime = async (): Promise<Runtime> => {
		const s = await started;
		if (!s.ok) {
			throw new Error(`Slate is not running in this session: ${s.reason}`);
		}
		return s.runtime;
	};

	pi.on("session_start", (_event, ctx) => {
		doctrine = null;
		if (!installation.ok) {
			started = Promise.resolve({ ok: false, reason: installation.reason });
			ctx.ui.notify(`Slate: ${installation.reason}`, "warning");
			return;
		}
		const { slate, extension } = installation.installation;
		const sessionDir = sessionDirOf(ctx);
		const sessionId = ctx.sessionManager.getSessionId();
		if (sessionDir === undefined) {
			started = Promise.resolve({ ok: false, reason: "this pi session has no session directory" });
			return;
		}
		started = Runtime.start({
			slate,
			sessionId,
			sessionDir,
			hostVersion: options.hostVersion,
			cwd: ctx.cwd,
			client: options.client,
			...(extension === undefined ? {} : { extension }),
		})
			.then(async (rt) => {
				doctrine = await reportHostExtensions(pi, rt.client);
				registerTools(pi, rt.tools, async () => {
					const current = await runtime();
					return {
						endpoint: current.endpoint,
						send,
						track: (connection) => current.track(connection),
					};
				});
				return rt;
			})
			.then(
				(rt): Started => {
					if (ctx.hasUI) {
						widget = new FleetWidget(
							slate,
							rt.parentId,
							ctx.cwd,
							(key, factory) => {
								try {
									ctx.ui.setWidget(key, factory);
								} catch {
									// The session was replaced meanwhile: its widget went with it.
								}
							},
							() => truncate,
						);
					}
					return { ok: true, runtime: rt };
				},
				(error: Error): Started => {
					try {
						ctx.ui.notify(`Slate could not start its coordinator: ${error.message}`, "error");
					} catch {
						// The session was replaced meanwhile; the tools still answer with the reason.
					}
					return { ok: false, reason: error.message };
				},
			);
	});

	pi.on("session_shutdown", async () => {
		widget?.stop();
		widget = undefined;
		const s = await started;
		started = Promise.resolve({ ok: false, reason: "the session has shut down" });
		if (s.ok) {
			await s.runtime.stop();
		}
	});

	registerReservation(pi, async () => {
		const s = await started;
		return s.ok ? { ok: true, client: s.runtime.client } : { ok: false, reason: s.reason };
	});
	registerOutcomeRenderer(pi);
	registerDoctrine(pi, async () => {
		await started;
		return doctrine;
	});
	registerHandoffMessages(pi);

	const session = async () => {
		const s = await started;
		if (!s.ok || run === undefined) {
			return { ok: false as const, reason: s.ok ? "Slate is not installed" : s.reason };
		}
		return { ok: true as const, run, slate: s.runtime.slate, parentId: s.runtime.parentId, socket: s.runtime.socket };
	};
	const cli = () =>
		installation.ok && run !== undefined
			? { ok: true as const, run, slate: installation.installation.slate }
			: { ok: false as const, reason: installation.ok ? "Slate is not installed" : installation.reason };
	registerCommands(pi, {
		session,
		targets: async () => {
			const s = await started;
			return s.ok ? (await s.runtime.client.call("targets", {})).targets : [];
		},
		cli,
		reportModels: async (hostModels) => {
			const s = await started;
			if (!s.ok) {
				return undefined;
			}
			try {
				await s.runtime.client.call("routingFacts", { hostModels });
			} catch {
				// Not kept: `slate effective --parent` then says pi's models were not reported.
			}
			return s.runtime.parentId;
		},
		env: options.env,
		openHub: options.openHub,
		handoff: registerHandoff(session),
	});
}
