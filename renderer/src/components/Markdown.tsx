import { memo, useEffect, useState } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";
import remarkMath from "remark-math";
import rehypeHighlight from "rehype-highlight";
import rehypeKatex from "rehype-katex";
import "katex/dist/katex.min.css";
import { splitThinking } from "../../../electron/core/api/thinking.js";

// react-markdown renders to React elements and ignores raw HTML in the text (no rehype-raw),
// so a model's answer can never inject markup or scripts: no separate sanitizer is needed.
// rehype-highlight (highlight.js grammars) marks up fenced code as hast, again no innerHTML.

interface HastNode {
  type: string;
  value?: string;
  children?: HastNode[];
}

function textOf(node: HastNode | undefined): string {
  if (!node) return "";
  if (node.type === "text") return node.value ?? "";
  return (node.children ?? []).map(textOf).join("");
}

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      className="copy-btn"
      aria-label={label}
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(
          () => {
            setDone(true);
            setTimeout(() => setDone(false), 1500);
          },
          () => setDone(false),
        );
      }}
    >
      {done ? "Copied" : "Copy"}
    </button>
  );
}

const components: Components = {
  pre({ node, children }) {
    const code = textOf(node).replace(/\n$/, "");
    const first = (node as unknown as { children?: { properties?: { className?: unknown } }[] })?.children?.[0];
    const cls = Array.isArray(first?.properties?.className) ? (first.properties.className as string[]) : [];
    const lang = cls.find((c) => c.startsWith("language-"))?.slice(9);
    return (
      <div className="code-block">
        <div className="code-head">
          <span>{lang ?? "code"}</span>
          <CopyButton text={code} label="Copy code" />
        </div>
        <pre>{children}</pre>
      </div>
    );
  },
  a({ href, children }) {
    // Links open outside the app window (Electron's shell handles target=_blank).
    return (
      <a href={href} target="_blank" rel="noreferrer noopener">
        {children}
      </a>
    );
  },
  img({ alt }) {
    // No remote content: images in answers are shown as their alt text.
    return <span className="img-alt">[image: {alt}]</span>;
  },
};

// Math ($…$, $$…$$) through KaTeX: it renders to hast as well (no innerHTML), with its CSS and
// fonts bundled, so the strict CSP (font-src 'self') holds. A formula KaTeX cannot parse is shown
// as its source in red rather than failing the whole answer.
const remarkPlugins = [remarkGfm, remarkMath];
const rehypePlugins = [
  [rehypeHighlight, { detect: false, ignoreMissing: true }],
  [rehypeKatex, { throwOnError: false, strict: "ignore" }],
] as NonNullable<Parameters<typeof ReactMarkdown>[0]["rehypePlugins"]>;

function MarkdownBody({ text }: { text: string }) {
  return (
    <ReactMarkdown remarkPlugins={remarkPlugins} rehypePlugins={rehypePlugins} components={components}>
      {text}
    </ReactMarkdown>
  );
}

/**
 * How long the model thought, in seconds, once its thought has closed: measured from the render
 * that first showed the thought open while the answer streamed to the render that showed it
 * closed. Null while it thinks, and for an answer that was not seen streaming (a reopened chat).
 */
function useThoughtSeconds(thinking: boolean, streaming: boolean): number | null {
  const [openedAt, setOpenedAt] = useState<number | null>(null);
  const [seconds, setSeconds] = useState<number | null>(null);
  useEffect(() => {
    // The clock is read in an effect (renders stay pure); the state it sets changes only the summary's words.
    /* eslint-disable react-hooks/set-state-in-effect -- the moment the thought opens or closes is only known after the render that shows it */
    if (thinking && streaming && openedAt === null) setOpenedAt(Date.now());
    else if (!thinking && openedAt !== null && seconds === null) setSeconds((Date.now() - openedAt) / 1000);
    /* eslint-enable react-hooks/set-state-in-effect */
  }, [thinking, streaming, openedAt, seconds]);
  return seconds;
}

/** "Thought for 12 s" (or "1 min 5 s"). */
export function thoughtFor(seconds: number): string {
  const s = Math.max(1, Math.round(seconds));
  return s < 60 ? `Thought for ${s} s` : `Thought for ${Math.floor(s / 60)} min ${s % 60} s`;
}

/**
 * An answer's text as markdown, a thinking model's thought collapsed above it. `streaming`: the
 * answer is still being written (the thought is timed, and a closed thought with no answer yet
 * shows the typing cursor; a thought never closed once it is not streaming was cut off: stopped,
 * or the token limit); `ended`: the answer is complete (not stopped, no error), so a thought
 * with no answer after it says so instead of leaving the bubble blank.
 */
export const Markdown = memo(function Markdown({ text, streaming = false, ended = false }: { text: string; streaming?: boolean; ended?: boolean }) {
  const { thought, thinking, answer } = splitThinking(text);
  const seconds = useThoughtSeconds(thought !== null && thinking, streaming);
  return (
    <div className="markdown">
      {thought !== null && (
        <details className="thinking">
          <summary>{thinking ? (streaming ? "Thinking…" : "Thought process (cut off)") : seconds !== null ? thoughtFor(seconds) : "Thought process"}</summary>
          <div className="thinking-body">{thought ? <MarkdownBody text={thought} /> : <p className="muted small">(nothing yet)</p>}</div>
        </details>
      )}
      {answer ? (
        <MarkdownBody text={answer} />
      ) : thought !== null && !thinking && streaming ? (
        <span className="typing" aria-label="Answer is being written" />
      ) : (
        thought !== null && !thinking && ended && <p className="small muted">The model gave an empty answer: it thought, then wrote nothing.</p>
      )}
    </div>
  );
});
