import { memo, useState, type ReactNode } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";
import rehypeHighlight from "rehype-highlight";

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
    const code = textOf(node as unknown as HastNode).replace(/\n$/, "");
    const first = (node as unknown as { children?: { properties?: { className?: unknown } }[] })?.children?.[0];
    const cls = Array.isArray(first?.properties?.className) ? (first.properties.className as string[]) : [];
    const lang = cls.find((c) => c.startsWith("language-"))?.slice(9);
    return (
      <div className="code-block">
        <div className="code-head">
          <span>{lang ?? "code"}</span>
          <CopyButton text={code} label="Copy code" />
        </div>
        <pre>{children as ReactNode}</pre>
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

const remarkPlugins = [remarkGfm];
const rehypePlugins = [[rehypeHighlight, { detect: false, ignoreMissing: true }]] as NonNullable<Parameters<typeof ReactMarkdown>[0]["rehypePlugins"]>;

export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown remarkPlugins={remarkPlugins} rehypePlugins={rehypePlugins} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
});
