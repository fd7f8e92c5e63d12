package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution/devices"
)

// listDevices: GET /api/devices, newest first, paginated.
func (s *Server) listDevices(c *gin.Context) error {
	return respond(c, http.StatusOK, page, s.svc.Devices.Devices, each(s.deviceView))
}

// syncDevice: PUT or PATCH /api/devices/:udid finds or creates the device and sets the fields
// sent (fastlane's zealot_sync_devices sends name and model). 201 when it was created.
func (s *Server) syncDevice(c *gin.Context) error {
	ctx := reqCtx(c)
	var ch devices.DeviceChanges
	if err := bind(c, &ch); err != nil {
		return err
	}
	d, created, err := s.svc.Devices.SyncDevice(ctx, c.Param("udid"), ch)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.JSON(status, s.deviceView(d))
	return nil
}

// getDevice: GET /api/devices/:udid.
func (s *Server) getDevice(c *gin.Context) error {
	return respond(c, http.StatusOK, pathParam("udid"), s.svc.Devices.Device, s.deviceView)
}

// deleteDevice: DELETE /api/devices/:udid (admin).
func (s *Server) deleteDevice(c *gin.Context) error {
	return respondDeleted(c, pathParam("udid"), s.svc.Devices.DeleteDevice)
}

// approveDevice: POST /api/devices/:udid/approve (admin) lets a device registered by an
// unverified profile answer into the export; audited.
func (s *Server) approveDevice(c *gin.Context) error {
	ctx := reqCtx(c)
	d, err := s.svc.Devices.ApproveDevice(ctx, c.Param("udid"))
	if err != nil {
		return err
	}
	c.JSON(http.StatusOK, s.deviceView(d))
	return nil
}

// exportDevices: GET /api/devices/export → the devices as the Apple developer portal's
// "register multiple devices" file (tab-separated text), without those awaiting approval.
func (s *Server) exportDevices(c *gin.Context) error {
	ctx := reqCtx(c)
	body, err := s.svc.Devices.ExportDevices(ctx)
	if err != nil {
		return err
	}
	c.Header("Content-Disposition", `attachment; filename="devices.txt"`)
	c.Data(http.StatusOK, "text/plain; charset=utf-8", body)
	return nil
}
