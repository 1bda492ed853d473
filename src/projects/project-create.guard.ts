import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { requireGlobalKey } from '../auth/auth.service.js';
import type { AuthedRequest } from '../auth/principal.js';
import { ProjectsService } from './projects.service.js';

/**
 * Scoped keys cannot create projects, and the plan limit is enforced before validation.
 * Guards run before pipes, so both checks live here (the service re-checks the limit atomically).
 */
@Injectable()
export class ProjectCreateGuard implements CanActivate {
  constructor(private readonly projects: ProjectsService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const principal = context.switchToHttp().getRequest<AuthedRequest>().principal;
    if (!principal) return false;
    requireGlobalKey(principal);
    await this.projects.assertBelowProjectLimit(principal.user);
    return true;
  }
}
