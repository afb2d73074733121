export { DEFAULT_HF_ENDPOINT, DEFAULT_MAX_FILE_BYTES, pullModel, StoreError } from './pull.ts';
export type { PulledFile, PullOptions, PullProgress, StoreErrorKind } from './pull.ts';
export { checkFile, MANIFEST_FILE, modelAvailability, modelDir, modelFilePath, sha256File, verifyModel } from './verify.ts';
export { recordedHash } from './record.ts';
export type { ExpectedFrom, FileCheck, FileStatus, ModelCheck } from './verify.ts';
