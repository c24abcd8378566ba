/**
 * A small English text the tiny tokenizer learns its merges from: everyday assistant talk,
 * a little code and JSON, so common words and tool-call syntax get their own tokens.
 */
export const TRAINING_TEXT = `
The assistant reads the question, thinks about what the user wants, and then answers in a
clear and friendly way. When the user asks for help with a file, the assistant opens the
file, looks at the lines that matter, and explains what it found. If something is not
clear, it asks a short question before it does anything that cannot be undone.

You are a helpful assistant. Please answer the question below. Thank you for your help!
I would like to know how this works. Can you show me an example? Here is what I tried.
That is a good question. Let me explain: there are three steps, and each of them is small.
First, we read the input. Second, we check that it is valid. Third, we write the result.
It is important to test the code after every change, so that we know it still works.

The weather today is sunny and warm, with a light wind from the west. In the evening
there will be some rain, and the temperature will fall to about ten degrees. People in
the city went to the park, where children were playing and their parents were talking.
She said that she would come back tomorrow, because there was still a lot of work to do.
He thought it was the best idea, and they started to work on it together at once.

function add(a, b) { return a + b; }
const result = await fetch("/v1/chat/completions", { method: "POST" });
if (error) { throw new Error("the request failed"); }
for (let i = 0; i < items.length; i++) { console.log(items[i]); }

<tool_call>
{"name": "get_weather", "arguments": {"location": "Paris", "unit": "celsius"}}
</tool_call>
<tool_response>
{"temperature": 21, "condition": "sunny"}
</tool_response>
{"role": "user", "content": "What is the weather in Paris?"}
{"role": "assistant", "content": "It is sunny in Paris, and the temperature is 21 degrees."}

Numbers like 1, 2, 3, 10, 42 and 2024 appear in text, and so do dates like 2024-05-17.
The model learns from feedback: a thumbs up, a thumbs down, or a hint about what to do.
Every conversation is saved, and the training runs in the background while you work.
`;
