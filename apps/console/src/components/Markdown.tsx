import ReactMarkdown, { type Components } from 'react-markdown';
import rehypeSanitize from 'rehype-sanitize';
import { safeHref } from '../lib/safe-url';

/**
 * Model and tool text as Markdown, the only way untrusted text is rendered other than as plain text:
 * raw HTML in it is not rendered (react-markdown leaves it out; `<img onerror>` stays text), the tree
 * goes through rehype-sanitize's GitHub schema, links only to http(s)/mailto (anything else is text),
 * and images never load (no request leaves for an origin a model chose).
 */
const components: Components = {
  a: ({ href, children }) => {
    const safe = safeHref(href);
    return safe ? (
      <a href={safe} target="_blank" rel="noopener noreferrer nofollow">
        {children}
      </a>
    ) : (
      <span className="inert-link">{children}</span>
    );
  },
  img: ({ alt }) => <span className="inert-image">[image: {alt ?? ''}]</span>,
};

export function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown
        skipHtml
        rehypePlugins={[rehypeSanitize]}
        components={components}
        urlTransform={(u) => safeHref(u) ?? ''}
      >
        {text}
      </ReactMarkdown>
    </div>
  );
}
