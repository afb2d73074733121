/** The two database engines the one migration set and the queries run on. */
export type Dialect = 'sqlite' | 'postgres';
