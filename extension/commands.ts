/**
 * The slash commands of the main session. Each runs the `slate` CLI for this session's
 * coordinator (`--parent <session id>`) and shows the CLI's own text, so `/subagent-status`
 * says exactly what `slate status` says:
 *
 * | command | runs |
 * |---|---|
 * | `/subagent-status [id generation]` | `slate status --parent P [-- id generation]` |
 * | `/subagent-stop id generation` | `slate stop --parent P -- id generation` |
 * | `/subagent-steer id generation text` | `slate steer --parent P -- id@generation text` |
 * | `/subagent-profiles [--prompts]` | `slate profiles --text [--prompts]` |
 * | `/subagent-hub` | the Hub as a pi overlay: `slate hub --frames` on this session's socket (hub_overlay.ts) |
 * | `/subagent-hub --pane` | `slate hub --parent P --pane`: the Hub in a new tmux pane (Slate picks where) |
 * | `/slate effective [flags]` | `slate effective --parent P [flags]`, after reporting pi's model registry (`routingFacts`) |
 * | `/slate handoff …`, `/slate resume …` | see handoff.ts |
 *
 * The CLI checks every argument (an identity is `UUID@generation` or `UUID generation`); the
 * words are passed after `--`, so text that starts with `-` is text. Tab completes the target of
 * `/subagent-status`, `/subagent-stop` and `/subagent-steer` from the coordinator's current
 * generations (`targets`): typing a handle or the start of an id offers the generations it begins,
 * and choosing one inserts its full `UUID@generation`; nothing short of that is a target.
 */
import type { ExtensionAPI, ExtensionCommandContext } from "@earendil-works/pi-coding-agent";

import { type CliRun, cliRunner, cliText, type RunCli, withoutErrorPrefix } from "./cli.ts";
import type { HostModel, TargetRow } from "./protocol.ts";
import type { OpenHub } from "./hub_overlay.ts";

/** What a command needs of the session: the CLI, and the coordinator's parent id. */
export type SessionLookup = () => Promise<
	{ ok: true; run: RunCli; slate: string; parentId: string; socket?: string } | { ok: false; reason: string }
>;

/** The CLI runner alone (profiles and effective need no coordinator). */
export type CliLookup = () => { ok: true; run: RunCli; slate: string } | { ok: false; reason: string };

export type Argv = { ok: true; argv: string[] } | { ok: false; usage: string };

/** Split on whitespace; `""` is no words. */
export function words(args: string): string[] {
	return args.trim() === "" ? [] : args.trim().split(/\s+/);
}

/** The narrowest table `slate status --width` lays out (Slate refuses less). */
const MIN_TABLE_WIDTH = 56;

/**
 * `/subagent-status`: one generation, or the fleet table fitted to `columns` (the terminal's
 * width, less the column pi keeps each side of a message) so pi wraps none of its rows.
 */
export function statusArgv(args: string, parentId: string, columns?: number): Argv {
	const w = words(args);
	if (w.length > 2) {
		return { ok: false, usage: "usage: /subagent-status [id generation]" };
	}
	if (w.length > 0) {
		return { ok: true, argv: ["status", "--parent", parentId, "--", ...w] };
	}
	const width = columns === undefined ? [] : ["--width", String(Math.max(MIN_TABLE_WIDTH, columns - 2))];
	return { ok: true, argv: ["status", "--parent", parentId, ...width] };
}

export function stopArgv(args: string, parentId: string): Argv {
	const w = words(args);
	if (w.length < 1 || w.length > 2) {
		return { ok: false, usage: "usage: /subagent-stop id generation" };
	}
	return { ok: true, argv: ["stop", "--parent", parentId, "--", ...w] };
}

/** `id generation text…` or `id@generation text…`; the text keeps its inner spacing. */
export function steerArgv(args: string, parentId: string): Argv {
	const usage = "usage: /subagent-steer id generation text";
	const match = /^\s*(\S+)(?:\s+(.*))?$/s.exec(args);
	if (match === null) {
		return { ok: false, usage };
	}
	let target = match[1];
	let rest = match[2] ?? "";
	if (!target.includes("@")) {
		const generation = /^(\S+)(?:\s+(.*))?$/s.exec(rest);
		if (generation === null) {
			return { ok: false, usage };
		}
		target = `${target}@${generation[1]}`;
		rest = generation[2] ?? "";
	}
	const text = rest.trim();
	if (text === "") {
		return { ok: false, usage };
	}
	return { ok: true, argv: ["steer", "--parent", parentId, "--", target, text] };
}

/** `/subagent-hub [--pane]`: the overlay, or the CLI's argv for a tmux pane. */
export function hubArgv(args: string, parentId: string): { overlay: true } | Argv {
	const w = words(args);
	if (w.length === 0) {
		return { overlay: true };
	}
	if (w.length === 1 && w[0] === "--pane") {
		return { ok: true, argv: ["hub", "--parent", parentId, "--pane"] };
	}
	return { ok: false, usage: "usage: /subagent-hub [--pane]" };
}

/** Show a run's text: info when it exited 0, else an error. */
export function showRun(ctx: ExtensionCommandContext, run: CliRun): void {
	ctx.ui.notify(run.code === 0 ? cliText(run) : withoutErrorPrefix(cliText(run)), run.code === 0 ? "info" : "error");
}

/**
 * Show a run whose warnings go to stderr (`slate effective`): exited 0, stdout as info and
 * stderr, if any, as a warning; otherwise all of it as an error.
 */
export function showRunWithWarning(ctx: Pick<ExtensionCommandContext, "ui">, run: CliRun): void {
	if (run.code !== 0) {
		ctx.ui.notify(withoutErrorPrefix(cliText(run)), "error");
		return;
	}
	ctx.ui.notify(cliText({ ...run, stderr: "" }), "info");
	if (run.stderr.trim() !== "") {
		ctx.ui.notify(withoutErrorPrefix(run.stderr.trimEnd()), "warning");
	}
}

/** pi's model registry as facts for Slate: every model, and whether pi has credentials for it. */
export function hostModels(registry: Pick<ExtensionCommandContext["modelRegistry"], "getAll" | "hasConfiguredAuth">): HostModel[] {
	return registry.getAll().map((m) => ({ provider: m.provider, id: m.id, credentials: registry.hasConfiguredAuth(m) }));
}

/** `slate effective`'s argv: this session's facts (`--parent`) when it has a coordinator. */
export function effectiveArgv(args: string, parentId: string | undefined): string[] {
	return ["effective", ...(parentId === undefined ? [] : ["--parent", parentId]), ...words(args)];
}

type Handler = (args: string, ctx: ExtensionCommandContext) => Promise<void>;

/** A handler that needs the coordinator: the reason is shown when there is none. */
function withSession(lookup: SessionLookup, body: (args: string, ctx: ExtensionCommandContext, s: { run: RunCli; slate: string; parentId: string; socket?: string }) => Promise<void>): Handler {
	return async (args, ctx) => {
		const found = await lookup();
		if (!found.ok) {
			ctx.ui.notify(`Slate is not running in this session: ${found.reason}`, "error");
			return;
		}
		await body(args, ctx, found);
	};
}

/** Run the argv a parser made, or show its usage. */
function runArgv(parse: (args: string, parentId: string) => Argv, lookup: SessionLookup): Handler {
	return withSession(lookup, async (args, ctx, s) => {
		const argv = parse(args, s.parentId);
		if (!argv.ok) {
			ctx.ui.notify(argv.usage, "error");
			return;
		}
		showRun(ctx, await s.run(argv.argv, ctx.cwd));
	});
}

/** Run a command that needs only the CLI. */
function runPlain(argv: string[], cli: CliLookup): Handler {
	return async (_args, ctx) => {
		const found = cli();
		if (!found.ok) {
			ctx.ui.notify(`Slate is not installed for this extension: ${found.reason}`, "error");
			return;
		}
		showRun(ctx, await found.run(argv, ctx.cwd));
	};
}

/** The coordinator's current generations (`targets`), or none when it cannot be asked. */
export type TargetLookup = () => Promise<TargetRow[]>;

/** pi's completion item (pi-tui's `AutocompleteItem`). */
export interface Completion {
	value: string;
	label: string;
	description?: string;
}

/**
 * Completions of a command's first word (the target): the current generations whose full
 * identity or handle begins with what was typed, each inserting the full `UUID@generation`
 * (and a space). Only the first word is completed; `null` once it is followed by more. This
 * only offers text to insert: what the command then receives is checked by Slate as an exact
 * identity, and a handle typed by hand is refused.
 */
export function targetCompletions(typed: string, targets: TargetRow[]): Completion[] | null {
	const word = typed.trimStart();
	if (/\s/.test(word)) {
		return null;
	}
	const items = targets
		.map((t) => ({ ...t, target: identity(t.target) }))
		.filter((t) => t.target.startsWith(word) || t.handle.startsWith(word))
		.map((t) => ({
			value: `${t.target} `,
			label: `${t.handle}  ${t.role}  ${t.status}`,
			description: t.headline,
		}));
	return items.length > 0 ? items : null;
}

/**
 * A target as `UUID@generation`: Slate writes that string; the schema also admits the object
 * form it accepts as input.
 */
function identity(target: TargetRow["target"]): string {
	return typeof target === "string" ? target : `${target.id}@${target.generation}`;
}

/** `getArgumentCompletions` for a command that takes a target first. */
function completeTarget(targets: TargetLookup): (typed: string) => Promise<Completion[] | null> {
	return async (typed) => {
		let rows: TargetRow[];
		try {
			rows = await targets();
		} catch {
			return null;
		}
		return targetCompletions(typed, rows);
	};
}

export interface CommandDeps {
	session: SessionLookup;
	/** The coordinator's current generations, for completion. */
	targets: TargetLookup;
	cli: CliLookup;
	env: Record<string, string | undefined>;
	/** The Hub overlay (hub_overlay.ts; passed in because it loads pi-tui, which only pi has). */
	openHub: OpenHub;
	/**
	 * Report pi's model registry to this session's coordinator (`routingFacts`); its parent id,
	 * or `undefined` when the session has no coordinator.
	 */
	reportModels: (models: HostModel[]) => Promise<string | undefined>;
	/** `/slate handoff …` and `/slate resume …`. */
	handoff: (sub: "handoff" | "resume", args: string, ctx: ExtensionCommandContext) => Promise<void>;
}

/** `/slate <sub> …`: the subcommand and the rest of the line. */
export function slateSubcommand(args: string): { sub: string; rest: string } {
	const match = /^\s*(\S*)\s*(.*)$/s.exec(args);
	return { sub: match?.[1] ?? "", rest: match?.[2] ?? "" };
}

export function registerCommands(pi: ExtensionAPI, deps: CommandDeps): void {
	pi.registerCommand("subagent-status", {
		getArgumentCompletions: completeTarget(deps.targets),
		description: "Slate: the fleet of this session, or one generation (id generation)",
		handler: runArgv((args, parentId) => statusArgv(args, parentId, process.stdout.columns), deps.session),
	});
	pi.registerCommand("subagent-stop", {
		getArgumentCompletions: completeTarget(deps.targets),
		description: "Slate: stop one generation and its subtree (id generation)",
		handler: runArgv(stopArgv, deps.session),
	});
	pi.registerCommand("subagent-steer", {
		getArgumentCompletions: completeTarget(deps.targets),
		description: "Slate: steer a running generation (id generation text)",
		handler: runArgv(steerArgv, deps.session),
	});
	pi.registerCommand("subagent-profiles", {
		description: "Slate: the resolved subagent profiles and tool policy (--prompts: each full role prompt)",
		// `slate profiles`' own flags (`--prompts`, `--approve`) pass through.
		handler: (args, ctx) => runPlain(["profiles", "--text", ...words(args)], deps.cli)(args, ctx),
	});
	pi.registerCommand("subagent-hub", {
		description: "Slate: the Subagent Hub for this session as an overlay (q closes); --pane opens it in a tmux pane",
		handler: withSession(deps.session, async (args, ctx, s) => {
			const plan = hubArgv(args, s.parentId);
			if ("overlay" in plan) {
				if (ctx.mode !== "tui" || s.socket === undefined) {
					ctx.ui.notify("The Hub overlay needs pi's interactive terminal; /subagent-hub --pane opens it in tmux", "error");
					return;
				}
				await deps.openHub(ctx, { slate: s.slate, socket: s.socket });
				return;
			}
			if (!plan.ok) {
				ctx.ui.notify(plan.usage, "error");
				return;
			}
			const run = await s.run(plan.argv, ctx.cwd);
			if (run.code !== 0) {
				ctx.ui.notify(cliText(run), "error");
			}
		}),
	});
	pi.registerCommand("slate", {
		description: "Slate: /slate effective | /slate handoff [--track-boundary|--post-check|--context-budget|--user-request] [focus] | /slate resume [--model provider/id] [--effort LEVEL]",
		handler: async (args, ctx) => {
			const { sub, rest } = slateSubcommand(args);
			switch (sub) {
				case "effective": {
					// `slate effective`'s own flags (`--recovery MODEL`, `--approve`) pass through.
					// pi's registry goes to the coordinator first, so Slate can say which permitted
					// routes this pi has; the session's remembered providers come with `--parent`.
					const found = deps.cli();
					if (!found.ok) {
						ctx.ui.notify(`Slate is not installed for this extension: ${found.reason}`, "error");
						return;
					}
					const parentId = await deps.reportModels(hostModels(ctx.modelRegistry));
					showRunWithWarning(ctx, await found.run(effectiveArgv(rest, parentId), ctx.cwd));
					return;
				}
				case "handoff":
				case "resume":
					return deps.handoff(sub, rest, ctx);
				default:
					ctx.ui.notify(
						`/slate ${sub}: unknown subcommand; expected effective, handoff or resume`,
						"error",
					);
			}
		},
	});
}
