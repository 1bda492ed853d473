import { Controller, Delete, Get, Param, Req } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { IdPipe } from '../common/http/id.pipe.js';
import { ApiEnvelope, ApiErrors, ApiIdParam, DATABASE_AWAY } from '../common/openapi/decorators.js';
import {
  PortalLicenseResponse,
  PortalOfflineTokenResponse,
  PortalSessionResponse,
  PortalSiteFreedResponse,
} from './dto/portal.dto.js';
import { PortalAuth, portalRequest, type PortalRequest } from './portal.guard.js';
import {
  allowanceUsed,
  type PortalLicense,
  type PortalPrincipal,
  PORTAL_CSRF_REFUSED,
  PortalService,
  TOKEN_NOT_PAID,
  type PortalSessionAnswer,
} from './portal.service.js';

const NOT_FOUND = {
  status: 404,
  description: 'No such license in this portal (another customer’s or another project’s is not found either)',
  message: 'License not found.',
};

/**
 * The customer portal's API (docs/portal.md): what the buyer's browser reads and does, with the portal
 * cookie only. Every license id is looked up among the session's own licenses, so another customer's
 * is simply not found.
 */
@ApiTags('portal')
@PortalAuth()
@ApiErrors(500, DATABASE_AWAY)
@Controller('portal')
export class PortalController {
  constructor(private readonly portal: PortalService) {}

  @Get('session')
  @ApiOperation({
    operationId: 'getPortalSession',
    summary: 'The portal session',
    description: 'The customer, their licenses, the csrf_token to send as X-CSRF-Token, and the return_url.',
  })
  @ApiEnvelope(PortalSessionResponse)
  session(@Req() req: PortalRequest): Promise<PortalSessionAnswer> {
    return this.portal.sessionAnswer(principal(req));
  }

  @Get('licenses')
  @ApiOperation({
    operationId: 'listPortalLicenses',
    summary: "The portal's licenses",
    description: 'Newest first, at most 100, each with its activations.',
  })
  @ApiEnvelope(PortalLicenseResponse, { isArray: true })
  async licenses(@Req() req: PortalRequest): Promise<PortalLicense[]> {
    const portal = principal(req);
    return this.portal.describeAll(portal.project, await this.portal.licensesOf(portal));
  }

  @Get('licenses/:license')
  @ApiOperation({
    operationId: 'getPortalLicense',
    summary: 'One license of the portal',
    description: 'With its activations, payment state, plan, entitlements and meters.',
  })
  @ApiIdParam('license', 'License id')
  @ApiEnvelope(PortalLicenseResponse)
  @ApiErrors(NOT_FOUND)
  async license(
    @Req() req: PortalRequest,
    @Param('license', IdPipe) licenseId: number,
  ): Promise<PortalLicense> {
    const portal = principal(req);
    return this.portal.describeOne(portal, await this.portal.licenseOf(portal, licenseId));
  }

  @Delete('licenses/:license/activations/:activation')
  @ApiOperation({
    operationId: 'freePortalSite',
    summary: 'Free a site',
    description:
      "Deletes one activation of the license: its slot is free at once. Counts against the license's " +
      'SELF_DEACTIVATIONS_PER_DAY (per UTC day, shared with POST /license/deactivate); the answer says how many ' +
      'are left. Sends license.deactivated with by "portal"; audited with the actor portal.',
  })
  @ApiIdParam('license', 'License id')
  @ApiIdParam('activation', 'Activation id')
  @ApiEnvelope(PortalSiteFreedResponse)
  @ApiErrors(
    {
      ...NOT_FOUND,
      description: `${NOT_FOUND.description}; or no such activation of the license`,
      message: 'Activation not found.',
    },
    {
      status: 403,
      description:
        "No X-CSRF-Token, or not this session's; the vendor's project is locked; freeing is turned off; or an API key or a console session was sent instead of the portal cookie",
      message: PORTAL_CSRF_REFUSED,
    },
    {
      status: 429,
      description: "The day's frees are used up (Retry-After: seconds to midnight UTC), or rate limited",
      message: allowanceUsed(3),
      retryAfter: true,
    },
  )
  freeSite(
    @Req() req: PortalRequest,
    @Param('license', IdPipe) licenseId: number,
    @Param('activation', IdPipe) activationId: number,
  ) {
    return this.portal.freeActivation(principal(req), licenseId, activationId, portalRequest(req));
  }

  @Get('licenses/:license/token')
  @ApiOperation({
    operationId: 'getPortalLicenseToken',
    summary: 'An offline token for a paid license',
    description:
      "Signed with the project's key, as the has-paid check's include=token (domain null); valid until the " +
      "earliest of the project's offline_grace_hours, the payment's grace and the license's expiry.",
  })
  @ApiIdParam('license', 'License id')
  @ApiEnvelope(PortalOfflineTokenResponse)
  @ApiErrors(NOT_FOUND, {
    status: 403,
    description:
      'The license is revoked, expired or not paid, or offline tokens are turned off; or an API key or a console session was sent instead of the portal cookie',
    message: TOKEN_NOT_PAID,
  })
  token(@Req() req: PortalRequest, @Param('license', IdPipe) licenseId: number) {
    return this.portal.offlineToken(principal(req), licenseId);
  }
}

const principal = (req: PortalRequest): PortalPrincipal => req.portal as PortalPrincipal;
