/** A host extension for the `workerExtensions` tests: one tool, `host_probe`, with a fixed answer. */
export default function (pi: any) {
	pi.registerTool({
		name: "host_probe",
		label: "Host probe",
		description: "Answers with a fixed line.",
		parameters: { type: "object", properties: {}, additionalProperties: false },
		async execute() {
			return { content: [{ type: "text", text: "host probe ran" }], details: {} };
		},
	});
}
