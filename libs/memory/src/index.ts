// Agent memory on Postgres full-text search (issue 13): the store, the memory tools and recall.
export {};
