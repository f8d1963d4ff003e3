/**
 * Side calls: model calls outside the loop's rounds (the summarizer sub-agent, reflection, the
 * compaction summary). Each file keeps its prompt beside its call; these are the public names.
 */
export { sideCall, type SideCallResult } from './side-call';
export { SUMMARIZER_FAILURE_LIMIT, SUMMARIZER_PROMPT, summarizerMessages } from './summarize';
export { COMPACTION_PROMPT, compactionMessages } from './compact';
export { REFLECTION_PROMPT, reflectionMessages } from './reflect';
export { isReflectionNote, REFLECTION_OPEN, reflectionNote } from './reflection-note';
