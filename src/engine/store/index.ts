export { DEFAULT_HF_ENDPOINT, pullModel, StoreError } from './pull.ts';
export type { PulledFile, PullOptions, PullProgress, StoreErrorKind } from './pull.ts';
export { checkFile, modelAvailability, modelDir, modelFilePath, sha256File, verifyModel } from './verify.ts';
export { recordedHash } from './record.ts';
export type { FileCheck, FileStatus, ModelCheck } from './verify.ts';
