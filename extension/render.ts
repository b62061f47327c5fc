/**
 * How Slate's tools look in pi: layout only. Every word comes from the coordinator: each child
 * row's `line` (status mark, role, 8-character handle, elapsed, tokens, cost, then the latest
 * activity or, once ended, the result headline), the artifact paths (relative to the project,
 * `~/…` under the home directory, sanitized: `src/tools/text.rs`), and the model-facing
 * `text`. Here they are coloured by status and fitted to pi's width (every line at most `width`
 * columns, never wrapped by pi): a row is cut with `…`; an artifact path is never cut, it
 * continues on the next lines, broken after a `/`, so it stays exact. The full text is shown on
 * pi's expand.
 *
 * A running call shows one live line per child (pi's partial results, from `toolUpdate`); a
 * background call's rows keep updating after its answer (`live`), and settle when its outcome
 * arrives.
 */
import type { Theme, ToolRenderResultOptions } from "@earendil-works/pi-coding-agent";
import type { Component } from "@earendil-works/pi-tui";

import type { ToolRow, ToolSpec } from "./protocol.ts";

/** A tool result's `details`, as the coordinator answered them (plus which answer it is). */
export type ToolDetails = {
	kind: "running" | "answer" | "outcome";
	call?: number;
	rows?: ToolRow[];
	error?: { code: string; message: string };
} & Record<string, unknown>;

/** Rows of background calls that changed after their answer, by pi's tool call id. */
const live = new Map<string, { rows: ToolRow[]; settled: boolean }>();
/** How to ask pi to draw a tool row again, by tool call id (from its latest render). */
const redraw = new Map<string, () => void>();

/** Newer rows for call `toolCallId` (a background call's updates and its outcome). */
export function updateLive(toolCallId: string, rows: ToolRow[], settled: boolean): void {
	live.set(toolCallId, { rows, settled });
	redraw.get(toolCallId)?.();
	if (settled) {
		redraw.delete(toolCallId);
	}
}

/**
 * pi's own width fitting (`truncateToWidth`: ANSI, wide characters), loaded from pi's copy of
 * pi-tui when this runs inside pi. Outside pi (the extension's node tests, where pi's packages
 * are not resolvable) a plain cut by code points stands in; escapes then count as columns, so
 * it cuts early and never too late for the ASCII those tests draw.
 */
let truncateToWidth = (line: string, width: number): string => {
	const chars = [...line];
	return chars.length <= width ? line : `${chars.slice(0, Math.max(0, width - 1)).join("")}…`;
};
/** Display columns of plain text (pi's `visibleWidth` inside pi; code points outside). */
let visibleWidth = (text: string): number => [...text].length;
import("@earendil-works/pi-tui").then(
	(tui) => {
		truncateToWidth = (line, width) => tui.truncateToWidth(line, width);
		visibleWidth = (text) => tui.visibleWidth(text);
	},
	() => {},
);

/** An artifact path, laid out at render time: exact, on as many lines as the width needs. */
interface PathLine {
	path: string;
	style: (text: string) => string;
}

type Line = string | PathLine;

/**
 * `path` after `lead` on the first line and `indent` on the next ones, each at most `width`
 * columns: broken after a `/` where one fits, else mid-segment (never cut short).
 */
export function pathLines(path: string, lead: string, indent: string, width: number): string[] {
	const out: string[] = [];
	let rest = [...path];
	let prefix = lead;
	while (rest.length > 0) {
		const room = Math.max(1, width - visibleWidth(prefix));
		let take = 0;
		let used = 0;
		let lastSlash = -1;
		while (take < rest.length) {
			const w = visibleWidth(rest[take]);
			if (used + w > room) {
				break;
			}
			used += w;
			if (rest[take] === "/") {
				lastSlash = take;
			}
			take += 1;
		}
		if (take < rest.length && lastSlash >= 0) {
			take = lastSlash + 1;
		}
		take = Math.max(1, take);
		out.push(`${prefix}${rest.slice(0, take).join("")}`);
		rest = rest.slice(take);
		prefix = indent;
	}
	return out;
}

/** Lines fitted to the width pi gives, never wrapped by pi. */
class Lines implements Component {
	private lines: Line[];

	constructor(lines: Line[]) {
		this.lines = lines;
	}

	set(lines: Line[]): void {
		this.lines = lines;
	}

	render(width: number): string[] {
		const w = Math.max(1, width);
		return this.lines.flatMap((line) =>
			typeof line === "string"
				? [truncateToWidth(line, w)]
				: pathLines(line.path, "  → ", "    ", w).map((l) => truncateToWidth(line.style(l), w)),
		);
	}

	invalidate(): void {}
}

type Color = Parameters<Theme["fg"]>[0];

function statusColor(status: string): Color {
	switch (status) {
		case "settled":
			return "success";
		case "failed":
			return "error";
		case "cancelled":
		case "paused":
		case "pausing":
			return "warning";
		case "queued":
			return "dim";
		default:
			return "accent";
	}
}

/** One child: its line, the mark coloured by status; artifacts below once ended. */
export function rowLines(row: ToolRow, theme: Theme, withArtifacts: boolean): Line[] {
	const [mark, ...rest] = [...row.line];
	const out: Line[] = [`${theme.fg(statusColor(row.status), mark ?? "")}${rest.join("")}`];
	if (withArtifacts) {
		for (const path of row.artifacts ?? []) {
			out.push({ path, style: (text) => theme.fg("dim", text) });
		}
	}
	return out;
}

function str(value: unknown): string | undefined {
	return typeof value === "string" && value !== "" ? value : undefined;
}

/** The call line: the tool's label and what was asked, in a few words. */
export function callSummary(tool: string, args: Record<string, unknown>): string {
	const parts: string[] = [];
	if (Array.isArray(args.tasks)) {
		parts.push(`${args.tasks.length} tasks`);
	}
	for (const key of ["action", "profile", "agent"]) {
		const value = str(args[key]);
		if (value !== undefined) {
			parts.push(value);
		}
	}
	const target = str(args.target) ?? str(args.id);
	if (target !== undefined) {
		parts.push(target.slice(0, 8));
	}
	if (args.background === true || (tool === "subagent" && args.async !== false && args.action === undefined)) {
		parts.push("background");
	}
	const text = str(args.assignment) ?? str(args.task) ?? str(args.text) ?? str(args.message);
	if (text !== undefined) {
		parts.push(JSON.stringify(text.split("\n")[0]));
	}
	return parts.join(" ");
}

export function renderCall(
	spec: ToolSpec,
	args: Record<string, unknown>,
	theme: Theme,
	context: { lastComponent?: Component | undefined },
): Component {
	const line = `${theme.fg("toolTitle", theme.bold(spec.label))} ${theme.fg("muted", callSummary(spec.name, args ?? {}))}`;
	const component = context.lastComponent instanceof Lines ? context.lastComponent : new Lines([]);
	component.set([line]);
	return component;
}

/** Lines of model text: all when expanded, else the first `keep` and a count. */
function textLines(text: string, expanded: boolean, keep: number, theme: Theme): string[] {
	const lines = text.split("\n");
	if (expanded || lines.length <= keep) {
		return lines.map((l) => theme.fg("toolOutput", l));
	}
	return [
		...lines.slice(0, keep).map((l) => theme.fg("toolOutput", l)),
		theme.fg("dim", `… ${lines.length - keep} more lines`),
	];
}

export function renderResult(
	_spec: ToolSpec,
	result: { content: { type: string; text?: string }[]; details?: ToolDetails | undefined },
	options: ToolRenderResultOptions,
	theme: Theme,
	context: {
		toolCallId: string;
		lastComponent?: Component | undefined;
		invalidate: () => void;
		isError: boolean;
		/** pi's key hint for expanding a tool row. */
		expandHint: string;
	},
): Component {
	const component = context.lastComponent instanceof Lines ? context.lastComponent : new Lines([]);
	const text = result.content
		.map((c) => c.text ?? "")
		.join("\n")
		.trimEnd();
	const details = result.details;
	const later = live.get(context.toolCallId);
	if (details?.kind === "answer" && details.call !== undefined && later?.settled !== true) {
		redraw.set(context.toolCallId, context.invalidate);
	}
	const rows = later?.rows ?? details?.rows;
	const lines: Line[] = [];
	if (context.isError || details?.error !== undefined) {
		lines.push(...textLines(text, options.expanded, 6, theme).map((l) => theme.fg("error", l)));
	} else if (rows !== undefined && rows.length > 0) {
		const running = options.isPartial || details?.kind === "running";
		for (const row of rows) {
			lines.push(...rowLines(row, theme, !running));
		}
		if (details?.kind === "answer" && details.call !== undefined && later?.settled !== true && !running) {
			const pending = rows.some((r) => !["settled", "failed", "cancelled"].includes(r.status));
			if (pending) {
				lines.push(theme.fg("dim", `call ${details.call}: the outcome follows as a message`));
			}
		}
		if (options.expanded && !running) {
			lines.push("", ...textLines(text, true, 0, theme));
		} else if (!running) {
			lines.push(theme.fg("dim", context.expandHint));
		}
	} else {
		lines.push(...textLines(text, options.expanded, 12, theme));
	}
	component.set(lines);
	return component;
}

/** A background call's outcome message: its settled rows and artifacts; the text on expand. */
export function renderOutcome(
	message: { content: unknown; details?: unknown },
	expanded: boolean,
	theme: Theme,
	expandHint: string,
): Component {
	const details = (message.details ?? {}) as ToolDetails;
	const text = typeof message.content === "string" ? message.content : "";
	const lines: Line[] = [theme.fg("toolTitle", theme.bold(`Slate · call ${details.call ?? "?"} drained`))];
	for (const row of details.rows ?? []) {
		lines.push(...rowLines(row, theme, true));
	}
	if (expanded) {
		lines.push("", ...textLines(text, true, 0, theme));
	} else {
		lines.push(theme.fg("dim", expandHint));
	}
	return new Lines(lines);
}
