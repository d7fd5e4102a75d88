/** Whether dist/ (npm run build) holds every source as it is now: built after the last change to src/ or generated/. */
export function freshBuild(root?: string): boolean;
