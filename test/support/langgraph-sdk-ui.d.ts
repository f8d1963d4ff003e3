// @langchain/langgraph-sdk publishes useStream's branching helpers only under its `./ui` export, which
// the repo's `moduleResolution: node` does not read; Jest resolves the export at run time, this gives
// tsc the types.
declare module '@langchain/langgraph-sdk/ui' {
  export { getBranchContext, getMessagesMetadataMap } from '@langchain/langgraph-sdk/dist/ui/branching';
}
