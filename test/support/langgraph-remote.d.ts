// @langchain/langgraph publishes RemoteGraph only under its `./remote` export, which the repo's
// `moduleResolution: node` does not read; Jest resolves the export at run time, this gives tsc the types.
declare module '@langchain/langgraph/remote' {
  export { RemoteGraph } from '@langchain/langgraph/dist/remote';
}
